//! The Monitor screen as talosctl lays it out.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::model::NodeView;

pub fn render(_node: &NodeView, _area: Rect, _buf: &mut Buffer) {}
