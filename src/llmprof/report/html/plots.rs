//! Shared chart styling: the base layout every chart starts from and the colour palettes.
use plotly::common::Title;
use plotly::layout::{Legend, Margin};
use plotly::Layout;

const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// The k-th colour of the palette (cycling).
pub fn marker_color(k: usize) -> &'static str {
    PALETTE[k % PALETTE.len()]
}

/// A titled layout with compact margins and the legend on the right.
pub fn base_layout(title: &str) -> Layout {
    Layout::new()
        .title(Title::with_text(title))
        .margin(Margin::new().left(60).right(20).top(50).bottom(60))
        .legend(Legend::new().font(plotly::common::Font::new().size(11)))
}
