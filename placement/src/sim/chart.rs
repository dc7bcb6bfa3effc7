//! An SVG chart of a simulation: GPU utilisation over time (top) and each job's largest group
//! spread at its start time (bottom), one colour per policy.

use std::fmt::Write as _;

use crate::sim::run::PolicyRun;

const WIDTH: f64 = 900.0;
const PANEL: f64 = 220.0;
const LEFT: f64 = 60.0;
const TOP: f64 = 50.0;
const GAP: f64 = 60.0;
const COLOURS: [&str; 5] = ["#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd"];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders the runs (same trace, different policies) as one SVG document.
pub fn render(runs: &[PolicyRun], title: &str) -> String {
    let span = runs
        .iter()
        .map(|r| r.summary.makespan_s)
        .fold(1.0_f64, f64::max);
    let max_spread = runs
        .iter()
        .flat_map(|r| r.jobs.iter().map(|j| j.spread.max))
        .max()
        .unwrap_or(0)
        .max(1);
    let plot_w = WIDTH - LEFT - 20.0;
    let x = |t: f64| LEFT + t / span * plot_w;
    let legend_top = TOP + 2.0 * PANEL + GAP + 30.0;
    let height = legend_top + 20.0 * runs.len() as f64 + 10.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{LEFT}" y="22" font-size="14">{}</text>"#,
        esc(title)
    );
    let bottom_top = TOP + PANEL + GAP;
    for (y0, label) in [
        (TOP, "GPU utilisation (0-100 %)"),
        (bottom_top, "largest group spread per job (at start)"),
    ] {
        let _ = write!(
            s,
            r##"<rect x="{LEFT}" y="{y0}" width="{plot_w}" height="{PANEL}" fill="none" stroke="#999"/><text x="{LEFT}" y="{}">{label}</text>"##,
            y0 - 4.0
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="end">time {:.0} s</text><text x="{}" y="{}" text-anchor="end">{max_spread}</text>"#,
        WIDTH - 20.0,
        bottom_top + PANEL + 16.0,
        span,
        LEFT - 4.0,
        bottom_top + 10.0
    );
    for (i, run) in runs.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let mut points = String::new();
        let mut last_y = TOP + PANEL;
        for sm in &run.samples {
            let y = TOP + PANEL * (1.0 - sm.utilisation.clamp(0.0, 1.0));
            let _ = write!(points, "{:.1},{last_y:.1} {:.1},{y:.1} ", x(sm.t), x(sm.t));
            last_y = y;
        }
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.2" opacity="0.8" points="{points}"/>"#
        );
        for j in run.jobs.iter() {
            let Some(t) = j.start_s else { continue };
            let y = bottom_top + PANEL * (1.0 - f64::from(j.spread.max) / f64::from(max_spread));
            let dx = (i as f64 - runs.len() as f64 / 2.0) * 2.0;
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{y:.1}" r="2.2" fill="{colour}" opacity="0.7"/>"#,
                x(t) + dx
            );
        }
        let ly = legend_top + 20.0 * i as f64 + 12.0;
        let lx = LEFT;
        let _ = write!(
            s,
            r#"<rect x="{lx}" y="{}" width="12" height="12" fill="{colour}"/><text x="{}" y="{ly}">{} ({:.1} % util, {} spread)</text>"#,
            ly - 10.0,
            lx + 16.0,
            esc(&run.summary.policy),
            run.summary.utilisation * 100.0,
            run.summary.total_spread
        );
    }
    s.push_str("</svg>\n");
    s
}
