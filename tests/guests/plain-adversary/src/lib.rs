//! A hostile component that knows nothing of toolhost: plain exported
//! functions that spin, allocate without end, panic, recurse without end,
//! sleep, and answer with a huge string, a million-element list and a
//! deeply nested value. Each is stopped by the limits any third-party tool
//! meets, and the host serves on.

wit_bindgen::generate!({
    inline: r#"
        package test:plain-adversary@0.1.0;

        world plain-adversary {
            export spin: func();
            export allocate: func(mib: u32) -> u32;
            export huge-string: func(mib: u32) -> string;
            export many: func(count: u32) -> list<u32>;
            export nested: func(width: u32) -> list<list<list<list<list<list<list<list<string>>>>>>>>;
            export too-deep: func(x: list<list<list<list<list<list<list<list<list<list<list<list<list<list<u8>>>>>>>>>>>>>>) -> u8;
            export crash: func() -> string;
            export recurse: func(depth: u64) -> u64;
            export sleep: func(ms: u64) -> string;
        }
    "#,
});

struct Adversary;

impl Guest for Adversary {
    fn spin() {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    fn allocate(mib: u32) -> u32 {
        let mut kept: Vec<Vec<u8>> = Vec::new();
        for _ in 0..mib {
            kept.push(vec![1u8; 1 << 20]);
        }
        std::hint::black_box(&kept);
        kept.len() as u32
    }

    fn huge_string(mib: u32) -> String {
        "x".repeat((mib as usize) << 20)
    }

    fn many(count: u32) -> Vec<u32> {
        (0..count).collect()
    }

    #[allow(clippy::type_complexity)]
    fn nested(width: u32) -> Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<String>>>>>>>> {
        let w = width as usize;
        vec![vec![vec![vec![vec![vec![vec![vec!["leaf".to_string(); w]; w]; w]; w]; w]; w]; w]; w]
    }

    #[allow(clippy::type_complexity)]
    fn too_deep(_x: Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<Vec<u8>>>>>>>>>>>>>>) -> u8 {
        0
    }

    fn crash() -> String {
        panic!("the adversary crashed on purpose")
    }

    fn recurse(depth: u64) -> u64 {
        if depth == 0 { 0 } else { 1 + Self::recurse(std::hint::black_box(depth - 1)) }
    }

    fn sleep(ms: u64) -> String {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        "slept".into()
    }
}

export!(Adversary);
