//! `--shard K/N` and `hvia merge`: a sweep split over several processes or machines
//! (Slurm job arrays, GNU parallel) and joined again. Shard K of N runs the sizes whose
//! index in the sorted size list is K-1 modulo N (so every shard gets large and small
//! sizes); its JSON carries `"shard": { "index", "count", "sizes" }` (`sizes`: the whole
//! list). `hvia merge` takes the JSON of every shard of one sweep (same preset, file,
//! overrides, operation, iterations, warm-up and size list; each index 1..N once) and
//! prints the unsharded JSON: the results in size order, `simulation` summed (simulated
//! time, events, and the shards' wall seconds), the `run` object of shard 1 without the
//! shard (keys in alphabetical order).

use serde_json::{Map, Value};

/// One shard of a sweep: `index` of `count`, from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which one, 1 ..= count.
    pub index: u32,
    /// How many.
    pub count: u32,
}

/// Parses `K/N` (1 <= K <= N <= 4096).
///
/// # Errors
/// Anything else, said in words.
pub fn parse_shard(text: &str) -> Result<Shard, String> {
    let (k, n) = text
        .split_once('/')
        .ok_or_else(|| format!("`{text}`: expected K/N, e.g. 1/4"))?;
    let num = |s: &str| {
        s.trim()
            .parse::<u32>()
            .map_err(|_| format!("`{text}`: `{s}` is not a whole number"))
    };
    let (index, count) = (num(k)?, num(n)?);
    if !(1..=4096).contains(&count) || !(1..=count).contains(&index) {
        return Err(format!("`{text}`: need 1 <= K <= N <= 4096"));
    }
    Ok(Shard { index, count })
}

/// The sizes of `sizes` (sorted) shard `s` runs.
#[must_use]
pub fn select(sizes: &[u32], s: Shard) -> Vec<u32> {
    sizes
        .iter()
        .enumerate()
        .filter(|(i, _)| *i as u64 % u64::from(s.count) == u64::from(s.index - 1))
        .map(|(_, &size)| size)
        .collect()
}

/// `json` (one pingpong report) with the `shard` object added last (the report's own
/// key order kept).
#[must_use]
pub fn annotate(json: &str, s: Shard, all: &[u32]) -> String {
    let body = json.trim_end();
    let Some(inner) = body.strip_suffix('}') else {
        return json.to_owned();
    };
    let sizes: Vec<String> = all.iter().map(u32::to_string).collect();
    let inner = inner.trim_end();
    let sep = if inner.ends_with('{') { "" } else { "," };
    format!(
        "{inner}{sep}\n  \"shard\": {{ \"index\": {}, \"count\": {}, \"sizes\": [{}] }}\n}}\n",
        s.index,
        s.count,
        sizes.join(", ")
    )
}

/// The keys every shard of one sweep must agree on.
const SAME: [&str; 4] = ["preset", "config_file", "overrides", "op"];

/// Joins the shards' JSON (`(file name, text)`) into the unsharded report.
///
/// # Errors
/// A file that is not a shard's JSON, shards of different sweeps, or a missing or
/// repeated shard, naming the file.
pub fn merge(files: &[(String, String)]) -> Result<String, String> {
    let mut shards: Vec<(u32, Map<String, Value>)> = Vec::new();
    let mut count = None;
    let mut sizes = None;
    let mut first: Option<(String, Map<String, Value>)> = None;
    for (name, text) in files {
        let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) else {
            return Err(format!("{name}: not a JSON object"));
        };
        let sh = o
            .get("shard")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("{name}: no `shard` object (not made with --shard)"))?;
        let (Some(k), Some(n), Some(all)) = (
            sh.get("index").and_then(Value::as_u64),
            sh.get("count").and_then(Value::as_u64),
            sh.get("sizes").cloned(),
        ) else {
            return Err(format!("{name}: a malformed `shard` object"));
        };
        if *count.get_or_insert(n) != n || *sizes.get_or_insert(all.clone()) != all {
            return Err(format!(
                "{name}: a shard of another sweep (count or sizes differ)"
            ));
        }
        if let Some((fname, f)) = &first {
            for key in SAME {
                if f.get(key) != o.get(key) {
                    return Err(format!("{name}: `{key}` differs from {fname}'s"));
                }
            }
            for key in ["iterations", "warmup"] {
                let of = |m: &Map<String, Value>| {
                    m.get("results")
                        .and_then(Value::as_array)
                        .and_then(|r| r.first())
                        .and_then(|r| r.get(key))
                        .cloned()
                };
                if let (Some(a), Some(b)) = (of(f), of(&o)) {
                    if a != b {
                        return Err(format!("{name}: `{key}` differs from {fname}'s"));
                    }
                }
            }
        } else {
            first = Some((name.clone(), o.clone()));
        }
        let k = u32::try_from(k).map_err(|_| format!("{name}: shard index out of range"))?;
        if shards.iter().any(|(i, _)| *i == k) {
            return Err(format!("{name}: shard {k} given twice"));
        }
        shards.push((k, o));
    }
    let n = count.ok_or("no files to merge")?;
    let n32 = u32::try_from(n).map_err(|_| "shard count out of range".to_owned())?;
    if let Some(missing) = (1..=n32).find(|k| !shards.iter().any(|(i, _)| i == k)) {
        return Err(format!("shard {missing}/{n} is missing"));
    }
    shards.sort_by_key(|(k, _)| *k);
    let mut results: Vec<Value> = shards
        .iter()
        .flat_map(|(_, o)| {
            o.get("results")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    results.sort_by_key(|r| r.get("size_bytes").and_then(Value::as_u64).unwrap_or(0));
    let sum = |key: &str| -> Value {
        let all = shards
            .iter()
            .filter_map(|(_, o)| o.get("simulation").and_then(|s| s.get(key)));
        if key == "wall_seconds" {
            all.filter_map(Value::as_f64).sum::<f64>().into()
        } else {
            all.filter_map(Value::as_u64).sum::<u64>().into()
        }
    };
    let mut sim = Map::new();
    for key in ["simulated_ps", "wall_seconds", "events"] {
        sim.insert(key.into(), sum(key));
    }
    let (_, mut out) = shards.swap_remove(0);
    out.remove("shard");
    out.insert("results".into(), Value::Array(results));
    out.insert("simulation".into(), Value::Object(sim));
    // Keep the key order of an unsharded report: `run` last.
    if let Some(run) = out.remove("run") {
        out.insert("run".into(), run);
    }
    serde_json::to_string_pretty(&Value::Object(out))
        .map(|t| t + "\n")
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_cover_every_size_once() {
        assert_eq!(parse_shard("2/3"), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", "1/5000"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
        let sizes: Vec<u32> = (0..10).map(|i| 4 << i).collect();
        let mut all: Vec<u32> = (1..=3)
            .flat_map(|k| select(&sizes, Shard { index: k, count: 3 }))
            .collect();
        all.sort_unstable();
        assert_eq!(all, sizes);
        assert_eq!(
            select(&sizes, Shard { index: 1, count: 3 }),
            vec![4, 32, 256, 2048]
        );
    }

    #[test]
    fn merge_refuses_missing_repeated_and_foreign_shards() {
        let shard = |k: u32, op: &str, size: u32| {
            (
                format!("s{k}.json"),
                annotate(
                    &format!(
                        "{{\"preset\":\"hvia-ge\",\"overrides\":[],\"op\":\"{op}\",\"results\":[{{\"size_bytes\":{size},\"iterations\":1,\"warmup\":1}}],\"simulation\":{{\"simulated_ps\":1,\"wall_seconds\":0.5,\"events\":2}}}}"
                    ),
                    Shard { index: k, count: 2 },
                    &[4, 8],
                ),
            )
        };
        let ok = merge(&[shard(2, "rdma-write", 8), shard(1, "rdma-write", 4)]).unwrap();
        let v: Value = serde_json::from_str(&ok).unwrap();
        assert_eq!(v["results"][0]["size_bytes"], 4);
        assert_eq!(v["simulation"]["events"], 4);
        assert!(v.get("shard").is_none());
        assert!(merge(&[shard(1, "rdma-write", 4)])
            .unwrap_err()
            .contains("2/2 is missing"));
        assert!(
            merge(&[shard(1, "rdma-write", 4), shard(1, "rdma-write", 4)])
                .unwrap_err()
                .contains("twice")
        );
        assert!(
            merge(&[shard(1, "rdma-write", 4), shard(2, "send-recv", 8)])
                .unwrap_err()
                .contains("`op` differs")
        );
    }
}
