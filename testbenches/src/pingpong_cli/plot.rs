//! `--plot FILE.svg|.png`: the sweep's one-way latency and bandwidth against message
//! size on log-log axes (pingpong), or the stages of a breakdown on a time line, one row
//! per component, coloured by clock domain (breakdown). With `--sweep`, one line per
//! what-if point in each panel, with a legend. Log axes are labelled at powers of ten
//! only (`1`, `10`, `100`, `1k`, ...; sizes in bytes as `1`, `10`, ..., `1M`).
//!
//! Drawn with plotters without system libraries: text uses DejaVu Sans, embedded in the
//! binary (the `dejavu` crate) and registered with plotters' `ab_glyph` font support.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;
use std::sync::Once;

use super::files::PlotKind;
use super::{Provenance, Sweep};
use crate::system::breakdown::Breakdown;

/// The font family every text of a plot uses.
const FONT: &str = "sans-serif";

/// Registers the embedded font (once per process).
pub(crate) fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_err()
        {
            tracing::warn!(target: "hvia", "the embedded font could not be registered");
        }
    });
}

/// What a plot shows.
enum Figure<'a> {
    /// Latency and bandwidth of a sweep.
    Sweep(&'a Sweep, &'a Provenance),
    /// Latency and bandwidth of several sweeps, one line each (label, sweep).
    Points(&'a [(String, Sweep)], &'a Provenance),
    /// The stages of a breakdown.
    Breakdown(&'a Breakdown, &'a Provenance),
}

impl Figure<'_> {
    /// Its size in pixels.
    fn size(&self) -> (u32, u32) {
        match self {
            Figure::Sweep(..) => (1200, 520),
            Figure::Points(p, _) => {
                let n = u32::try_from(p.len()).unwrap_or(64).min(64);
                (1400, 520_u32.saturating_add(n.saturating_mul(16)))
            }
            Figure::Breakdown(bd, _) => {
                let rows = u32::try_from(rows(bd).len()).unwrap_or(u32::MAX / 64);
                (1200, 160_u32.saturating_add(rows.saturating_mul(30)))
            }
        }
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        match self {
            Figure::Sweep(s, p) => draw_sweep(
                root,
                std::slice::from_ref(&(String::new(), (*s).clone())),
                p,
            ),
            Figure::Points(points, p) => draw_sweep(root, points, p),
            Figure::Breakdown(b, p) => draw_breakdown(root, b, p),
        }
    }
}

/// Draws `fig` into `path` as SVG or PNG.
fn render(path: &Path, kind: PlotKind, fig: &Figure<'_>) -> Result<(), String> {
    fonts();
    let size = fig.size();
    match kind {
        PlotKind::Svg => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            fig.draw(&root)?;
            root.present().map_err(err)
        }
        PlotKind::Png => {
            let root = BitMapBackend::new(path, size).into_drawing_area();
            fig.draw(&root)?;
            root.present().map_err(err)
        }
    }
}

/// The exponent of `v` if it is a power of ten (to rounding), else `None`.
fn decade(v: f64) -> Option<i32> {
    if !(v > 0.0 && v.is_finite()) {
        return None;
    }
    let e = v.log10().round();
    #[allow(clippy::cast_possible_truncation)]
    let exp = e as i32; // |e| < 400 for finite f64
    ((v / 10f64.powi(exp) - 1.0).abs() < 1e-6).then_some(exp)
}

/// A log-axis label: powers of ten only, SI-style (`0.01`, `1`, `100`, `10k`, `1M`);
/// other ticks stay unlabelled.
fn decade_label(v: f64) -> String {
    match decade(v) {
        Some(e) if e >= 9 => format!("{}G", trim(10f64.powi(e - 9))),
        Some(e) if e >= 6 => format!("{}M", trim(10f64.powi(e - 6))),
        Some(e) if e >= 3 => format!("{}k", trim(10f64.powi(e - 3))),
        Some(e) if e >= 0 => trim(10f64.powi(e)),
        Some(e) => format!("{}", 10f64.powi(e)),
        None => String::new(),
    }
}

/// A number without trailing zeros, at most 2 decimals.
fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A log axis range around the positive values of `it`, with some room.
fn log_range(it: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = it
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return 1.0..10.0;
    }
    // Whole decades, so that the axis has powers of ten to label.
    10f64.powf((lo / 1.5).log10().floor())..10f64.powf((hi * 1.5).log10().ceil())
}

/// Line colours, one per what-if point (then repeated).
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// One line of a panel: its legend label (empty: no legend) and its (size, value)s.
type Line = (String, Vec<(f64, f64)>);

/// One log-log panel of `lines`, a colour each (`color` for a single line).
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    y_desc: &str,
    lines: &[Line],
    color: RGBColor,
) -> Result<(), String> {
    let lines: Vec<Line> = lines
        .iter()
        .map(|(l, pts)| {
            (
                l.clone(),
                pts.iter().copied().filter(|p| p.1 > 0.0).collect(),
            )
        })
        .collect();
    let all = || lines.iter().flat_map(|(_, p)| p.iter().copied());
    let xs = log_range(all().map(|p| p.0));
    let ys = log_range(all().map(|p| p.1));
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, 18))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(xs.log_scale(), ys.log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("message size (bytes)")
        .y_desc(y_desc)
        .x_label_formatter(&|v| decade_label(*v))
        .y_label_formatter(&|v| decade_label(*v))
        .label_style((FONT, 14))
        .draw()
        .map_err(err)?;
    let legend = lines.len() > 1;
    for (i, (label, points)) in lines.iter().enumerate() {
        let c = if legend {
            PALETTE[i % PALETTE.len()]
        } else {
            color
        };
        let series = chart
            .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
            .map_err(err)?;
        if legend {
            series.label(label.as_str()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
            });
        }
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(err)?;
    }
    if legend {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font((FONT, 12))
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

fn draw_sweep<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    sweeps: &[(String, Sweep)],
    prov: &Provenance,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let op = sweeps.first().map_or("", |(_, s)| s.op.name());
    let title = if sweeps.len() > 1 {
        format!(
            "hvia ping-pong, {op} ({}), {} what-if points",
            prov.label(),
            sweeps.len()
        )
    } else {
        format!("hvia ping-pong, {op} ({})", prov.label())
    };
    let root = root.titled(&title, (FONT, 20)).map_err(err)?;
    let (left, right) = root.split_horizontally(root.dim_in_pixel().0 / 2);
    let size = |r: &super::SizeResult| f64::from(r.size);
    let latency: Vec<Line> = sweeps
        .iter()
        .map(|(l, s)| {
            (
                l.clone(),
                s.results
                    .iter()
                    .map(|r| (size(r), r.one_way_ns / 1e3))
                    .collect(),
            )
        })
        .collect();
    let bandwidth: Vec<Line> = sweeps
        .iter()
        .map(|(l, s)| {
            (
                l.clone(),
                s.results
                    .iter()
                    .map(|r| (size(r), r.bandwidth_mb_s))
                    .collect(),
            )
        })
        .collect();
    panel(
        &left,
        "One-way latency",
        "one-way latency (us)",
        &latency,
        BLUE,
    )?;
    panel(
        &right,
        "Bandwidth",
        "bandwidth (MB/s, 10^6 bytes)",
        &bandwidth,
        RED,
    )
}

/// Draws the sweep into `path`.
pub(super) fn sweep(
    path: &Path,
    kind: PlotKind,
    sweep: &Sweep,
    prov: &Provenance,
) -> Result<(), String> {
    render(path, kind, &Figure::Sweep(sweep, prov))
}

/// Draws several sweeps into `path`, one line per (label, sweep).
pub(super) fn points(
    path: &Path,
    kind: PlotKind,
    points: &[(String, Sweep)],
    prov: &Provenance,
) -> Result<(), String> {
    render(path, kind, &Figure::Points(points, prov))
}

/// Draws the breakdown into `path`.
pub(super) fn breakdown(
    path: &Path,
    kind: PlotKind,
    bd: &Breakdown,
    prov: &Provenance,
) -> Result<(), String> {
    render(path, kind, &Figure::Breakdown(bd, prov))
}

/// The row of a stage: its component, or its name when it has none (`unattributed`).
fn row_name(s: &crate::system::breakdown::Stage) -> &str {
    if s.component.is_empty() {
        &s.name
    } else {
        &s.component
    }
}

/// The rows of the time line: components in order of first appearance.
fn rows(bd: &Breakdown) -> Vec<&str> {
    let mut rows: Vec<&str> = Vec::new();
    for s in &bd.stages {
        let r = row_name(s);
        if !rows.contains(&r) {
            rows.push(r);
        }
    }
    rows
}

fn draw_breakdown<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    bd: &Breakdown,
    prov: &Provenance,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let rows = rows(bd);
    let n = i32::try_from(rows.len()).unwrap_or(i32::MAX - 1);
    let total = bd.one_way_ns().max(1e-3);
    let title = format!(
        "One-way latency of a {}-byte {} message: {:.1} ns ({})",
        bd.size_bytes,
        bd.op.name(),
        bd.one_way_ns(),
        prov.label()
    );
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 18))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(150)
        .build_cartesian_2d(0f64..total, 0f64..f64::from(n))
        .map_err(err)?;
    // Row r (from the top) spans [n-1-r, n-r); its label sits at its centre.
    let top = |r: usize| f64::from(n) - 1.0 - f64::from(i32::try_from(r).unwrap_or(0));
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("ns since the message's start")
        .label_style((FONT, 14))
        .draw()
        .map_err(err)?;
    let mut domains: Vec<&str> = Vec::new();
    for s in &bd.stages {
        if !domains.contains(&s.domain.as_str()) {
            domains.push(&s.domain);
        }
    }
    for (d, domain) in domains.iter().enumerate() {
        let color = Palette99::pick(d).to_rgba();
        let bars = bd.stages.iter().filter(|s| s.domain == *domain).map(|s| {
            let r = rows.iter().position(|x| *x == row_name(s)).unwrap_or(0);
            let x0 = s.start.saturating_since(bd.start).as_ns_f64();
            let x1 = s.end.saturating_since(bd.start).as_ns_f64();
            Rectangle::new([(x0, top(r) + 0.15), (x1, top(r) + 0.85)], color.filled())
        });
        let label = if domain.is_empty() { "none" } else { domain };
        chart
            .draw_series(bars)
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    // Row names, right-aligned just left of the plotting area (in pixels of the root).
    let style = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    for (r, name) in rows.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(0.0, top(r) + 0.5));
        root.draw(&Text::new((*name).to_owned(), (x - 8, y), style.clone()))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 14))
        .draw()
        .map_err(err)?;
    Ok(())
}
