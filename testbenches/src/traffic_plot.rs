//! `hvia traffic --plot FILE.svg|.png`: two panels, each node's bandwidth as bars
//! (received and sent, MB/s) and the distribution of the messages' latencies under
//! load as a cumulative curve (fraction of messages seen within a latency, with p50 and
//! p99 marked). Drawn with plotters and the embedded font, like `pingpong --plot`.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// The font family every text uses (registered by `pingpong_cli::plot::fonts`).
const FONT: &str = "sans-serif";

/// What the plot shows.
pub struct TrafficPlot<'a> {
    /// Title line.
    pub title: String,
    /// Per node: (rank, received MB/s, sent MB/s).
    pub nodes: Vec<(usize, f64, f64)>,
    /// Every message's latency, sorted \[ps\].
    pub latencies_ps: &'a [u64],
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The file's format from its name: `.svg` or `.png`.
///
/// # Errors
/// Any other name, with the reason.
pub fn kind_of(path: &Path) -> Result<bool, String> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("svg") => Ok(true),
        Some("png") => Ok(false),
        _ => Err(format!(
            "{}: the file name must end in .svg or .png (the format to draw)",
            path.display()
        )),
    }
}

/// Draws `plot` into `path` (SVG or PNG by its name).
///
/// # Errors
/// A bad file name or a drawing/writing failure, as text.
pub fn draw(path: &Path, plot: &TrafficPlot<'_>) -> Result<(), String> {
    crate::pingpong_cli::fonts();
    let size = (1200, 520);
    if kind_of(path)? {
        let root = SVGBackend::new(path, size).into_drawing_area();
        panels(&root, plot)?;
        root.present().map_err(err)
    } else {
        let root = BitMapBackend::new(path, size).into_drawing_area();
        panels(&root, plot)?;
        root.present().map_err(err)
    }
}

const RECEIVED: RGBColor = RGBColor(31, 119, 180);
const SENT: RGBColor = RGBColor(255, 127, 14);

fn panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    plot: &TrafficPlot<'_>,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(&plot.title, (FONT, 20)).map_err(err)?;
    let (left, right) = root.split_horizontally(root.dim_in_pixel().0 / 2);
    bars(&left, &plot.nodes)?;
    cdf(&right, plot.latencies_ps)
}

#[allow(clippy::cast_precision_loss)]
fn bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    nodes: &[(usize, f64, f64)],
) -> Result<(), String> {
    let n = nodes.len().max(1);
    let top = nodes
        .iter()
        .map(|&(_, r, s)| r.max(s))
        .fold(0.0_f64, f64::max)
        .max(1.0)
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption("bandwidth per node", (FONT, 18))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("node")
        .y_desc("MB/s")
        .x_labels(n.min(17))
        .x_label_formatter(&|v| {
            if (v - v.round()).abs() < 1e-6 && *v >= 0.0 {
                format!("{}", v.round())
            } else {
                String::new()
            }
        })
        .label_style((FONT, 14))
        .draw()
        .map_err(err)?;
    let w = 0.38;
    chart
        .draw_series(nodes.iter().map(|&(k, r, _)| {
            let x = k as f64 - w;
            Rectangle::new([(x, 0.0), (x + w, r)], RECEIVED.filled())
        }))
        .map_err(err)?
        .label("received")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], RECEIVED.filled()));
    chart
        .draw_series(nodes.iter().map(|&(k, _, s)| {
            let x = k as f64;
            Rectangle::new([(x, 0.0), (x + w, s)], SENT.filled())
        }))
        .map_err(err)?
        .label("sent")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], SENT.filled()));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font((FONT, 12))
        .draw()
        .map_err(err)
}

#[allow(clippy::cast_precision_loss)]
fn cdf<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, lat: &[u64]) -> Result<(), String> {
    let us = |ps: u64| ps as f64 / 1e6;
    let max = lat.last().map_or(1.0, |&m| us(m)).max(1e-3) * 1.05;
    let mut chart = ChartBuilder::on(area)
        .caption("latency per message, posted to seen", (FONT, 18))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..max, 0.0..1.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("latency (us)")
        .y_desc("fraction of messages")
        .label_style((FONT, 14))
        .draw()
        .map_err(err)?;
    let n = lat.len().max(1) as f64;
    let mut points = vec![(0.0, 0.0)];
    for (i, &l) in lat.iter().enumerate() {
        points.push((us(l), i as f64 / n));
        points.push((us(l), (i + 1) as f64 / n));
    }
    chart
        .draw_series(LineSeries::new(points, RECEIVED.stroke_width(2)))
        .map_err(err)?;
    for (q, label) in [(0.5, "p50"), (0.99, "p99")] {
        let v = us(crate::system::traffic::percentile(lat, q));
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(v, 0.0), (v, q)],
                BLACK.mix(0.5).stroke_width(1),
            )))
            .map_err(err)?;
        // Left of the line in the right part of the panel, so it stays inside.
        let anchor = if v > max * 0.6 {
            Pos::new(HPos::Right, VPos::Bottom)
        } else {
            Pos::new(HPos::Left, VPos::Bottom)
        };
        chart
            .draw_series(std::iter::once(Text::new(
                format!(" {label} {v:.0} us "),
                (v, q),
                TextStyle::from((FONT, 13)).pos(anchor),
            )))
            .map_err(err)?;
    }
    Ok(())
}
