//! `tally`, a small program of the kind people build for WASI: its first
//! argument says what it does with the rest and with standard input.

use std::io::{Read, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let rest = args.get(2..).unwrap_or_default();
    match args.get(1).map(String::as_str) {
        // Its own arguments, the program's name first, one per line.
        Some("args") => {
            for arg in &args {
                println!("{arg}");
            }
        }
        // Lines, words and bytes of standard input.
        Some("wc") => {
            let mut input = Vec::new();
            std::io::stdin().read_to_end(&mut input).expect("reading stdin");
            let text = String::from_utf8_lossy(&input);
            println!("{} {} {}", text.lines().count(), text.split_whitespace().count(), input.len());
        }
        // Each file named, as it is.
        Some("cat") => {
            for file in rest {
                match std::fs::read(file) {
                    Ok(bytes) => std::io::stdout().write_all(&bytes).expect("writing stdout"),
                    Err(e) => {
                        eprintln!("tally: {file}: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
        }
        // Writes its standard input to the file named.
        Some("write") => {
            let mut input = Vec::new();
            std::io::stdin().read_to_end(&mut input).expect("reading stdin");
            if let Err(e) = std::fs::write(&rest[0], &input) {
                eprintln!("tally: {}: {e}", rest[0]);
                return ExitCode::from(2);
            }
            println!("wrote {} bytes", input.len());
        }
        // The variables it can see, and where it runs.
        Some("env") => {
            for (key, value) in std::env::vars() {
                println!("{key}={value}");
            }
            println!("cwd={}", std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default());
        }
        // Fails the way programs do: a message on stderr, a status.
        Some("fail") => {
            println!("partial output");
            eprintln!("tally: something went wrong");
            std::process::exit(rest.first().and_then(|s| s.parse().ok()).unwrap_or(3));
        }
        Some("quiet") => {}
        Some("exit0") => {
            println!("leaving early");
            std::process::exit(0);
        }
        // Bytes of output, past any cap.
        Some("flood") => {
            let n: usize = rest.first().and_then(|s| s.parse().ok()).unwrap_or(1 << 20);
            let line = [b'x'; 1023];
            let mut out = std::io::stdout().lock();
            let mut written = 0;
            while written < n {
                out.write_all(&line).and_then(|()| out.write_all(b"\n")).expect("writing stdout");
                written += 1024;
            }
        }
        Some("spin") => loop {
            std::hint::black_box(0);
        },
        Some("sleep") => std::thread::sleep(std::time::Duration::from_secs(3600)),
        Some("allocate") => {
            let mut kept: Vec<Vec<u8>> = Vec::new();
            loop {
                kept.push(vec![1; 1 << 20]);
            }
        }
        Some("panic") => panic!("tally was asked to panic"),
        other => {
            eprintln!("tally: unknown action {other:?}; try args, wc, cat, write, env, fail, flood");
            return ExitCode::from(64);
        }
    }
    ExitCode::SUCCESS
}
