//! `--sweep KEY=V1,V2,...`: parsing the options and building the grid of every
//! combination of their values, in option order (the first key varies slowest).

/// One `--sweep` option: a config key and the values it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Axis {
    /// The config key, as `--set` takes it (`pci.system.clock_mhz`).
    pub key: String,
    /// Its values, in the order given.
    pub values: Vec<String>,
}

/// Most points a grid may have (a typo like `1..1000` should not start 1000 runs).
pub const MAX_POINTS: usize = 256;

/// Parses one `--sweep` value.
///
/// # Errors
/// A message naming what is wrong (the caller names the option).
pub fn axis(text: &str) -> Result<Axis, String> {
    let (key, values) = text.split_once('=').ok_or_else(|| {
        format!("{text}: expected KEY=V1,V2,... (e.g. pci.system.clock_mhz=33,66)")
    })?;
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("{text}: the key is empty"));
    }
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_owned()).collect();
    if values.iter().any(String::is_empty) {
        return Err(format!(
            "{text}: an empty value (values are separated by commas)"
        ));
    }
    let mut seen = values.clone();
    seen.sort();
    seen.dedup();
    if seen.len() != values.len() {
        return Err(format!("{text}: a value is given twice"));
    }
    Ok(Axis {
        key: key.to_owned(),
        values,
    })
}

/// Every combination of the axes' values, as `KEY=VALUE` overrides (one per axis).
///
/// # Errors
/// A key swept twice, or more than [`MAX_POINTS`] points.
pub fn grid(axes: &[Axis]) -> Result<Vec<Vec<String>>, String> {
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].iter().any(|b| b.key == a.key) {
            return Err(format!("{}: the key is swept twice", a.key));
        }
    }
    let n = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .unwrap_or(usize::MAX);
    if n > MAX_POINTS {
        return Err(format!("{n} points: at most {MAX_POINTS} per run"));
    }
    let mut points: Vec<Vec<String>> = vec![Vec::new()];
    for a in axes {
        points = points
            .into_iter()
            .flat_map(|p| {
                a.values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push(format!("{}={v}", a.key));
                    q
                })
            })
            .collect();
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_and_grids() {
        let a = axis("pci.system.clock_mhz=33, 66").unwrap();
        assert_eq!(a.values, ["33", "66"]);
        let b = axis("card.att_location=card,host").unwrap();
        let g = grid(&[a.clone(), b]).unwrap();
        assert_eq!(
            g,
            [
                ["pci.system.clock_mhz=33", "card.att_location=card"],
                ["pci.system.clock_mhz=33", "card.att_location=host"],
                ["pci.system.clock_mhz=66", "card.att_location=card"],
                ["pci.system.clock_mhz=66", "card.att_location=host"],
            ]
        );
        assert_eq!(grid(&[]).unwrap(), [Vec::<String>::new()]);
        for bad in ["x", "=1", "a=", "a=1,,2", "a=1,1"] {
            assert!(axis(bad).is_err(), "{bad}");
        }
        assert!(grid(&[a.clone(), a]).unwrap_err().contains("twice"));
        let many = axis(&format!(
            "a={}",
            (0..17).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
        ))
        .unwrap();
        let other = Axis {
            key: "b".into(),
            ..many.clone()
        };
        assert!(grid(&[many, other]).unwrap_err().contains("at most 256"));
    }
}
