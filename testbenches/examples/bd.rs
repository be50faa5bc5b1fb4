//! Prints the breakdown of one message (development aid).
use testbenches::config::SystemConfig;
use testbenches::system::breakdown::measure;
use testbenches::system::Op;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(4);
    let op = if args.get(2).map(String::as_str) == Some("send-recv") {
        Op::SendRecv
    } else {
        Op::RdmaWrite
    };
    let preset = std::env::args()
        .find_map(|a| a.strip_prefix("preset=").map(str::to_owned))
        .unwrap_or_else(|| "hvia-ge".into());
    let mut cfg = SystemConfig::from_preset(&preset).expect("preset");
    for a in std::env::args()
        .skip(1)
        .filter(|a| a.contains('=') && !a.starts_with("preset="))
    {
        cfg.apply_set(&a).expect("--set");
    }
    match measure(&cfg, op, size) {
        Ok(b) => {
            println!("one-way {:.1} ns", b.one_way_ns());
            for s in &b.stages {
                println!(
                    "{:>10.1} {:>10.1} {:>8.1}  {:<28} {:<22} {:<11} {}",
                    s.start.as_ns_f64() - b.start.as_ns_f64(),
                    s.end.as_ns_f64() - b.start.as_ns_f64(),
                    (s.end - s.start).as_ns_f64(),
                    s.name,
                    s.component,
                    s.domain,
                    s.cycles.0
                );
            }
        }
        Err(e) => println!("error: {e}"),
    }
}
