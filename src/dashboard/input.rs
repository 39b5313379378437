//! Keys, as talosctl's dashboard binds them: `h`/← and `l`/→ switch node, `F1`-`F3` switch
//! screen, `q`/`Ctrl-C` quit; in the Summary's log pane and the Resources screen's lists
//! `j`/`k`/↓/↑ move a line, `Ctrl-d`/`Ctrl-u` half a page, `Ctrl-f`/`Ctrl-b` (and PgDn/PgUp)
//! a page, `g`/`G` (Home/End) to the top and bottom; Enter opens, Esc goes back and `/`
//! filters the resource types. While the filter line has the keys (`typing`), characters
//! are its text and only the function keys and `Ctrl-C` keep their meaning.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::model::Screen;

/// How far a move goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Line,
    HalfPage,
    Page,
}

impl Step {
    /// Lines for a page of `page` lines.
    pub fn lines(self, page: usize) -> usize {
        match self {
            Step::Line => 1,
            Step::HalfPage => (page / 2).max(1),
            Step::Page => page.max(1),
        }
    }
}

/// What a key asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Quit,
    PrevNode,
    NextNode,
    Show(Screen),
    Up(Step),
    Down(Step),
    Top,
    Bottom,
    /// Enter.
    Select,
    /// Esc.
    Back,
    /// `/`.
    Filter,
    /// A character for the filter line.
    Type(char),
    /// Backspace on the filter line.
    Erase,
}

/// The command a key press means, if any (releases and repeats of other kinds are ignored).
pub fn command(key: &KeyEvent) -> Option<Command> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let cmd = match key.code {
        KeyCode::Char('c') if ctrl => Command::Quit,
        KeyCode::Char('d') if ctrl => Command::Down(Step::HalfPage),
        KeyCode::Char('u') if ctrl => Command::Up(Step::HalfPage),
        KeyCode::Char('f') if ctrl => Command::Down(Step::Page),
        KeyCode::Char('b') if ctrl => Command::Up(Step::Page),
        _ if ctrl => return None,
        KeyCode::Char('q') => Command::Quit,
        KeyCode::Char('h') | KeyCode::Left => Command::PrevNode,
        KeyCode::Char('l') | KeyCode::Right => Command::NextNode,
        KeyCode::Char('k') | KeyCode::Up => Command::Up(Step::Line),
        KeyCode::Char('j') | KeyCode::Down => Command::Down(Step::Line),
        KeyCode::PageUp => Command::Up(Step::Page),
        KeyCode::PageDown => Command::Down(Step::Page),
        KeyCode::Char('g') | KeyCode::Home => Command::Top,
        KeyCode::Char('G') | KeyCode::End => Command::Bottom,
        KeyCode::F(1) => Command::Show(Screen::Summary),
        KeyCode::F(2) => Command::Show(Screen::Monitor),
        KeyCode::F(3) => Command::Show(Screen::Resources),
        KeyCode::Enter => Command::Select,
        KeyCode::Esc => Command::Back,
        KeyCode::Char('/') => Command::Filter,
        _ => return None,
    };
    Some(cmd)
}

/// The command a key press means while a text line has the keys.
pub fn typing(key: &KeyEvent) -> Option<Command> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    Some(match key.code {
        KeyCode::Char('c') if ctrl => Command::Quit,
        _ if ctrl => return None,
        KeyCode::Char(c) => Command::Type(c),
        KeyCode::Backspace => Command::Erase,
        KeyCode::Enter => Command::Select,
        KeyCode::Esc => Command::Back,
        KeyCode::F(_) => return command(key),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> Option<Command> {
        command(&KeyEvent::new(code, modifiers))
    }

    #[test]
    fn talosctl_keys() {
        let none = KeyModifiers::NONE;
        let ctrl = KeyModifiers::CONTROL;
        assert_eq!(key(KeyCode::Char('q'), none), Some(Command::Quit));
        assert_eq!(key(KeyCode::Char('c'), ctrl), Some(Command::Quit));
        assert_eq!(key(KeyCode::Char('c'), none), None);
        assert_eq!(key(KeyCode::Left, none), Some(Command::PrevNode));
        assert_eq!(key(KeyCode::Char('h'), none), Some(Command::PrevNode));
        assert_eq!(key(KeyCode::Right, none), Some(Command::NextNode));
        assert_eq!(key(KeyCode::Char('l'), none), Some(Command::NextNode));
        assert_eq!(
            key(KeyCode::F(1), none),
            Some(Command::Show(Screen::Summary))
        );
        assert_eq!(
            key(KeyCode::F(2), none),
            Some(Command::Show(Screen::Monitor))
        );
        assert_eq!(
            key(KeyCode::F(3), none),
            Some(Command::Show(Screen::Resources))
        );
        assert_eq!(key(KeyCode::F(4), none), None);
        assert_eq!(
            key(KeyCode::Char('j'), none),
            Some(Command::Down(Step::Line))
        );
        assert_eq!(key(KeyCode::Up, none), Some(Command::Up(Step::Line)));
        assert_eq!(
            key(KeyCode::Char('d'), ctrl),
            Some(Command::Down(Step::HalfPage))
        );
        assert_eq!(key(KeyCode::Char('b'), ctrl), Some(Command::Up(Step::Page)));
        assert_eq!(key(KeyCode::Char('q'), ctrl), None);
        assert_eq!(key(KeyCode::Enter, none), Some(Command::Select));
        assert_eq!(key(KeyCode::Esc, none), Some(Command::Back));
        assert_eq!(key(KeyCode::Char('/'), none), Some(Command::Filter));
        assert_eq!(key(KeyCode::Tab, none), None);
        let mut release = KeyEvent::new(KeyCode::Char('q'), none);
        release.kind = KeyEventKind::Release;
        assert_eq!(command(&release), None);
    }

    #[test]
    fn a_text_line_takes_the_characters() {
        let t = |code, modifiers| typing(&KeyEvent::new(code, modifiers));
        let none = KeyModifiers::NONE;
        assert_eq!(t(KeyCode::Char('q'), none), Some(Command::Type('q')));
        assert_eq!(t(KeyCode::Char('l'), none), Some(Command::Type('l')));
        assert_eq!(t(KeyCode::Backspace, none), Some(Command::Erase));
        assert_eq!(t(KeyCode::Enter, none), Some(Command::Select));
        assert_eq!(t(KeyCode::Esc, none), Some(Command::Back));
        assert_eq!(t(KeyCode::F(1), none), Some(Command::Show(Screen::Summary)));
        assert_eq!(
            t(KeyCode::Char('c'), KeyModifiers::CONTROL),
            Some(Command::Quit)
        );
        assert_eq!(t(KeyCode::Left, none), None);
    }
}
