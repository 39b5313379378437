//! Classic BPF as the kernel runs a socket filter: the program checked as `SO_ATTACH_FILTER`
//! checks it (known opcodes, jumps inside it, scratch slots in range, no division by a zero
//! constant, a return last), then run on each frame: the bytes to keep, 0 to drop it.

use talm_wire::proto::machine::BpfInstruction;

/// The kernel's limit on a program's length.
const MAX_INSNS: usize = 4096;
/// Scratch memory slots.
const SLOTS: u32 = 16;

/// Why the kernel refuses a program (`EINVAL`).
#[derive(Debug, PartialEq, Eq)]
pub struct Invalid;

const LD: u32 = 0x00;
const LDX: u32 = 0x01;
const ST: u32 = 0x02;
const STX: u32 = 0x03;
const ALU: u32 = 0x04;
const JMP: u32 = 0x05;
const RET: u32 = 0x06;
const MISC: u32 = 0x07;

/// Checks `prog` as the kernel does before it attaches it.
pub fn check(prog: &[BpfInstruction]) -> Result<(), Invalid> {
    if prog.is_empty() || prog.len() > MAX_INSNS {
        return Err(Invalid);
    }
    for (pc, i) in prog.iter().enumerate() {
        let rest = (prog.len() - pc - 1) as u32;
        let ok = match i.op & 0x07 {
            LD | LDX => match (i.op & 0x07, i.op & 0xe0) {
                (LD, 0x00 | 0x20 | 0x40 | 0x80) => matches!(i.op & 0x18, 0x00 | 0x08 | 0x10),
                (LD, 0x60) | (LDX, 0x60) => i.op & 0x18 == 0 && i.k < SLOTS,
                (LDX, 0x00 | 0x80) => i.op & 0x18 == 0,
                (LDX, 0xa0) => i.op & 0x18 == 0x10,
                _ => false,
            },
            ST | STX => i.op & 0xf8 == 0 && i.k < SLOTS,
            ALU => match i.op & 0xf0 {
                0x30 | 0x90 if i.op & 0x08 == 0 => i.k != 0,
                0x00..=0xa0 => true,
                _ => false,
            },
            // Every jump lands on an instruction after it.
            JMP => match i.op & 0xf0 {
                0x00 => i.op & 0x08 == 0 && i.k < rest,
                0x10..=0x40 => i.jt < rest && i.jf < rest,
                _ => false,
            },
            RET => matches!(i.op & 0x18, 0x00 | 0x10),
            MISC => matches!(i.op & 0xf8, 0x00 | 0x80),
            _ => false,
        };
        if !ok {
            return Err(Invalid);
        }
    }
    match prog.last().map(|i| i.op) {
        Some(op) if op & 0x07 == RET => Ok(()),
        _ => Err(Invalid),
    }
}

/// Runs a checked `prog` on `frame`: how many of its bytes the socket keeps (0: dropped).
pub fn run(prog: &[BpfInstruction], frame: &[u8]) -> u32 {
    let (mut a, mut x, mut mem) = (0u32, 0u32, [0u32; SLOTS as usize]);
    let load = |at: u64, size: u32| -> Option<u32> {
        let at = usize::try_from(at).ok()?;
        let bytes = frame.get(at..at.checked_add(size as usize)?)?;
        Some(bytes.iter().fold(0u32, |v, b| v << 8 | u32::from(*b)))
    };
    let mut pc = 0usize;
    while let Some(i) = prog.get(pc) {
        pc += 1;
        let src = if i.op & 0x08 == 0 { i.k } else { x };
        match i.op & 0x07 {
            LD | LDX => {
                let size = match i.op & 0x18 {
                    0x00 => 4,
                    0x08 => 2,
                    _ => 1,
                };
                let v = match i.op & 0xe0 {
                    0x00 => Some(i.k),
                    0x20 => load(u64::from(i.k), size),
                    0x40 => load(u64::from(x) + u64::from(i.k), size),
                    0x60 => Some(mem[i.k as usize]),
                    0x80 => Some(frame.len() as u32),
                    0xa0 => load(u64::from(i.k), 1).map(|b| 4 * (b & 0xf)),
                    _ => None,
                };
                let Some(v) = v else { return 0 };
                if i.op & 0x07 == LD {
                    a = v;
                } else {
                    x = v;
                }
            }
            ST => mem[i.k as usize] = a,
            STX => mem[i.k as usize] = x,
            ALU => {
                a = match i.op & 0xf0 {
                    0x00 => a.wrapping_add(src),
                    0x10 => a.wrapping_sub(src),
                    0x20 => a.wrapping_mul(src),
                    0x30 | 0x90 if src == 0 => return 0,
                    0x30 => a / src,
                    0x90 => a % src,
                    0x40 => a | src,
                    0x50 => a & src,
                    0x60 => a.checked_shl(src).unwrap_or(0),
                    0x70 => a.checked_shr(src).unwrap_or(0),
                    0x80 => a.wrapping_neg(),
                    _ => a ^ src,
                }
            }
            JMP => {
                let taken = match i.op & 0xf0 {
                    0x00 => {
                        pc += i.k as usize;
                        continue;
                    }
                    0x10 => a == src,
                    0x20 => a > src,
                    0x30 => a >= src,
                    _ => a & src != 0,
                };
                pc += if taken { i.jt } else { i.jf } as usize;
            }
            RET => {
                return match i.op & 0x18 {
                    0x10 => a,
                    _ => i.k,
                }
            }
            _ => {
                if i.op & 0x80 == 0 {
                    x = a;
                } else {
                    a = x;
                }
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prog(lines: &[(u32, u32, u32, u32)]) -> Vec<BpfInstruction> {
        lines
            .iter()
            .map(|&(op, jt, jf, k)| BpfInstruction { op, jt, jf, k })
            .collect()
    }

    #[test]
    fn tcpdumps_arp_filter_keeps_only_arp() {
        // `tcpdump -dd arp`
        let arp = prog(&[
            (0x28, 0, 0, 12),
            (0x15, 0, 1, 0x0806),
            (0x6, 0, 0, 262144),
            (0x6, 0, 0, 0),
        ]);
        assert_eq!(check(&arp), Ok(()));
        let mut frame = vec![0u8; 60];
        frame[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(run(&arp, &frame), 262144);
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        assert_eq!(run(&arp, &frame), 0);
        // A load past the frame's end drops it.
        assert_eq!(run(&arp, &frame[..10]), 0);
    }

    #[test]
    fn icmp_through_the_ip_header_length() {
        // `tcpdump -dd icmp`: IPv4 and protocol 1.
        let icmp = prog(&[
            (0x28, 0, 0, 12),
            (0x15, 0, 3, 0x0800),
            (0x30, 0, 0, 23),
            (0x15, 0, 1, 1),
            (0x6, 0, 0, 96),
            (0x6, 0, 0, 0),
        ]);
        assert_eq!(check(&icmp), Ok(()));
        let mut frame = vec![0u8; 98];
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        frame[23] = 1;
        assert_eq!(run(&icmp, &frame), 96);
        frame[23] = 6;
        assert_eq!(run(&icmp, &frame), 0);
    }

    #[test]
    fn the_kernel_refuses_what_it_cannot_run() {
        for bad in [
            vec![],
            prog(&[(0x28, 0, 0, 12)]),
            prog(&[(0x15, 5, 0, 1), (0x6, 0, 0, 0)]),
            prog(&[(0x34, 0, 0, 0), (0x6, 0, 0, 0)]),
            prog(&[(0x02, 0, 0, 16), (0x6, 0, 0, 0)]),
            prog(&[(0xff, 0, 0, 0), (0x6, 0, 0, 0)]),
        ] {
            assert_eq!(check(&bad), Err(Invalid), "{bad:?}");
        }
    }
}
