//! A component of a plain world whose exports are WASI 0.3 `async func`s
//! (the component-model async ABI), waiting on WASI 0.3's clock: each is a
//! tool, called as a task, within the call's deadline.

wit_bindgen::generate!({
    inline: r#"
        package test:plain-async@0.1.0;

        world plain-async {
            /// Waits `ms` milliseconds, then says so.
            export wait: async func(ms: u32) -> string;
            export double: async func(n: s32) -> result<s32, string>;
        }
    "#,
});

struct PlainAsync;

impl Guest for PlainAsync {
    async fn wait(ms: u32) -> String {
        wasip3::clocks::monotonic_clock::wait_for(u64::from(ms) * 1_000_000).await;
        format!("waited {ms} ms")
    }

    async fn double(n: i32) -> Result<i32, String> {
        wasip3::clocks::monotonic_clock::wait_for(1_000_000).await;
        n.checked_mul(2).ok_or_else(|| format!("{n} doubled does not fit an s32"))
    }
}

export!(PlainAsync);
