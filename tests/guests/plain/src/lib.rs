//! A component built the way the wider ecosystem builds them: a plain
//! world of its own (records, variants, enums, flags, options, results,
//! tuples, every integer width, bytes, a resource), no toolhost contract,
//! no SDK. toolhost serves each exported function as a tool.

// The generated export glue of `widths` takes all eight integers.
#![allow(clippy::too_many_arguments)]

wit_bindgen::generate!({
    inline: r#"
        package test:plain@0.1.0;

        /// Shapes.
        interface geometry {
            record point { x: f64, y: f64 }
            variant shape { circle(f32), square(f64), dot }
            /// The area of a shape.
            area: func(s: shape) -> f64;
            /// The point halfway between two points.
            midpoint: func(a: point, b: point) -> point;
        }

        /// Integers at their edges.
        interface edges {
            widths: func(a: s8, b: u8, c: s16, d: u16, e: s32, f: u32, g: s64, h: u64) -> tuple<s8, u8, s16, u16, s32, u32, s64, u64>;
            halves: func(x: f32, y: f64) -> tuple<f32, f64>;
            nan: func() -> f64;
        }

        /// State that lives in a resource, which a tool call cannot hold.
        interface stateful {
            resource counter {
                constructor(start: u32);
                next: func() -> u32;
            }
            make: func(start: u32) -> counter;
            version: func() -> string;
        }

        world plain {
            enum color { red, green, blue }
            flags access { read, write, exec }
            record person { name: string, age: u8, nick: option<string>, tags: list<string> }

            /// Greets someone by name.
            ///
            /// Says it louder when `excited`.
            export greet: func(name: string, excited: option<bool>) -> string;
            export describe: func(p: person, c: color, a: access) -> result<person, string>;
            export echo-bytes: func(b: list<u8>) -> list<u8>;
            export first-char: func(s: string) -> option<char>;
            export fail: func(message: string) -> result<u32, string>;
            export fail-bare: func() -> result<u32>;
            export nothing: func();
            export area: func(w: f64, h: f64) -> f64;
            export read-file: func(path: string) -> result<string, string>;
            export list-dir: func(path: string) -> result<list<string>, string>;
            export env: func(key: string) -> option<string>;
            export geometry;
            export edges;
            export stateful;
        }
    "#,
});

use exports::test::plain::edges;
use exports::test::plain::geometry::{self, Point, Shape};
use exports::test::plain::stateful::{self, Counter, GuestCounter};
use std::cell::Cell;

struct Plain;

impl Guest for Plain {
    fn greet(name: String, excited: Option<bool>) -> String {
        match excited {
            Some(true) => format!("HELLO, {}!", name.to_uppercase()),
            _ => format!("Hello, {name}."),
        }
    }

    fn describe(p: Person, c: Color, a: Access) -> Result<Person, String> {
        if p.name.is_empty() {
            return Err("a person needs a name".into());
        }
        let mut tags = p.tags;
        tags.push(
            match c {
                Color::Red => "red",
                Color::Green => "green",
                Color::Blue => "blue",
            }
            .into(),
        );
        for (flag, name) in [(Access::READ, "read"), (Access::WRITE, "write"), (Access::EXEC, "exec")] {
            if a.contains(flag) {
                tags.push(name.into());
            }
        }
        Ok(Person { name: p.name, age: p.age.saturating_add(1), nick: p.nick.map(|n| n.to_uppercase()), tags })
    }

    fn echo_bytes(b: Vec<u8>) -> Vec<u8> {
        b.into_iter().rev().collect()
    }

    fn first_char(s: String) -> Option<char> {
        s.chars().next()
    }

    fn fail(message: String) -> Result<u32, String> {
        Err(message)
    }

    fn fail_bare() -> Result<u32, ()> {
        Err(())
    }

    fn nothing() {}

    fn area(w: f64, h: f64) -> f64 {
        w * h
    }

    fn read_file(path: String) -> Result<String, String> {
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))
    }

    fn list_dir(path: String) -> Result<Vec<String>, String> {
        let entries = std::fs::read_dir(&path).map_err(|e| format!("cannot list {path}: {e}"))?;
        let mut names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        Ok(names)
    }

    fn env(key: String) -> Option<String> {
        std::env::var(key).ok()
    }
}

impl geometry::Guest for Plain {
    fn area(s: Shape) -> f64 {
        match s {
            Shape::Circle(r) => std::f64::consts::PI * f64::from(r) * f64::from(r),
            Shape::Square(side) => side * side,
            Shape::Dot => 0.0,
        }
    }

    fn midpoint(a: Point, b: Point) -> Point {
        Point { x: (a.x + b.x) / 2.0, y: (a.y + b.y) / 2.0 }
    }
}

impl edges::Guest for Plain {
    #[allow(clippy::too_many_arguments)]
    fn widths(a: i8, b: u8, c: i16, d: u16, e: i32, f: u32, g: i64, h: u64) -> (i8, u8, i16, u16, i32, u32, i64, u64) {
        (a, b, c, d, e, f, g, h)
    }

    fn halves(x: f32, y: f64) -> (f32, f64) {
        (x / 2.0, y / 2.0)
    }

    fn nan() -> f64 {
        f64::NAN
    }
}

struct Count(Cell<u32>);

impl GuestCounter for Count {
    fn new(start: u32) -> Count {
        Count(Cell::new(start))
    }

    fn next(&self) -> u32 {
        self.0.set(self.0.get() + 1);
        self.0.get()
    }
}

impl stateful::Guest for Plain {
    type Counter = Count;

    fn make(start: u32) -> Counter {
        Counter::new(Count::new(start))
    }

    fn version() -> String {
        "1".into()
    }
}

export!(Plain);
