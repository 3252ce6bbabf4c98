// Writing toolhost tools in JavaScript, built into components with
// componentize-qjs (QuickJS), jco (`--backend quickjs`) or componentize-js (SpiderMonkey).
//
// A tool is a declaration plus `call` (and, where the answer depends on the
// input, the classifications), handed to `define`:
//
//     import { define, ToolError } from "./toolhost.js";
//
//     export const tool = define({
//       name: "Hello",
//       description: "Greets someone.",
//       inputSchema: {
//         type: "object",
//         properties: { who: { type: "string" } },
//         required: ["who"],
//       },
//       readOnly: true,
//       call(input, ctx) {
//         ctx.progress("greeting");
//         return `Hello, ${input.who}!`;
//       },
//     });
//
// What the helper does for you:
// - Fail-closed defaults: not read-only, not concurrency-safe, not
//   destructive, no opinion on permissions; a classification that throws
//   answers the safe way (false).
// - What is left out, or declared (`readOnly: true`, `concurrencySafe:
//   true`), is told to the host once, in the tool's info, and the host stops
//   asking on each call.
// - `throw new ToolError(message, kind)` becomes the model's error result;
//   anything else thrown becomes an `internal` error carrying its stack,
//   instead of a crashed instance or an unreadable error.
// - `console.log` / `info` / `debug` / `warn` / `error` go to the host's log,
//   tagged with the tool and the call (QuickJS has no console of its own).
// - `inputSchema` gets `additionalProperties: false` unless it says
//   otherwise, so a misspelt field is refused by the host before `call`.
// - The input arrives parsed; `call` may return a string, any other JSON
//   value (sent as a JSON block), or an `Output`.

import { log as hostLog, report } from "toolhost:tool/progress@1.6.0";
import * as hostSession from "toolhost:tool/session@1.6.0";

const KINDS = [
  "invalid-input",
  "not-found",
  "permission-denied",
  "conflict",
  "too-large",
  "unsupported",
  "io",
  "internal",
];
const ACCESS = ["read", "search", "edit"];
const LEVELS = ["trace", "debug", "info", "warn", "error"];

/** A failure the model can act on: `message` says what went wrong and what to
 * do about it; `kind` is one of the contract's error kinds. */
export class ToolError extends Error {
  constructor(message, kind = "invalid-input") {
    if (!KINDS.includes(kind)) {
      throw new TypeError(`unknown error kind ${JSON.stringify(kind)}; one of ${KINDS.join(", ")}`);
    }
    super(message);
    this.name = "ToolError";
    this.kind = kind;
  }
}

/** A result: content blocks in order (strings become text blocks), optional
 * structured JSON (valid against `outputSchema` if declared), and whether the
 * model should see it as an error while still getting the content. */
export class Output {
  constructor(content, { structured, isError = false } = {}) {
    this.content = Array.isArray(content) ? content : [content];
    this.structured = structured;
    this.isError = isError;
  }
}

/** A text block. */
export function text(value) {
  return { tag: "text", val: String(value) };
}

/** A JSON block. */
export function json(value) {
  return { tag: "json", val: JSON.stringify(value) };
}

function logLine(level, message) {
  hostLog(LEVELS.includes(level) ? level : "info", String(message));
}

function show(value) {
  if (typeof value === "string") return value;
  if (value instanceof Error) return value.stack ? `${value}\n${value.stack}` : String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

// Both engines' consoles go to the host's log: QuickJS has none (calling it
// would throw), and SpiderMonkey's writes to the guest's stdout.
const consoleToLog = (level) => (...args) => logLine(level, args.map(show).join(" "));
globalThis.console = {
  log: consoleToLog("info"),
  info: consoleToLog("info"),
  debug: consoleToLog("debug"),
  trace: consoleToLog("trace"),
  warn: consoleToLog("warn"),
  error: consoleToLog("error"),
};

/** The tool's own key-value state in this session (values are strings;
 * `getJson` / `setJson` store JSON): the state that outlives a call (a fresh
 * instance serves each call unless the tool sets `reuseInstance`). */
export const session = {
  get(key, fallback = undefined) {
    const value = hostSession.get(key);
    return value == null ? fallback : value;
  },
  set(key, value) {
    try {
      hostSession.set(key, String(value));
    } catch (e) {
      const why = e && typeof e === "object" && "payload" in e ? e.payload : e;
      throw new ToolError(`session state refused ${JSON.stringify(key)}: ${why}`, "too-large");
    }
  },
  getJson(key, fallback = undefined) {
    const value = hostSession.get(key);
    return value == null ? fallback : JSON.parse(value);
  },
  setJson(key, value) {
    this.set(key, JSON.stringify(value));
  },
  remove(key) {
    hostSession.remove(key);
  },
  keys(prefix = "") {
    return hostSession.keys(prefix);
  },
};

const MODES = {
  default: "default",
  plan: "plan",
  "accept-edits": "acceptEdits",
  "dont-ask": "dontAsk",
  "bypass-permissions": "bypassPermissions",
};

/** The call being served: its ids, directories and mode, progress, the log
 * and session state. */
class Context {
  constructor(ctx) {
    this.toolUseId = ctx.toolUseId;
    this.sessionId = ctx.sessionId;
    this.cwd = ctx.cwd;
    this.workingDirs = [...ctx.workingDirs];
    this.readOnlyDirs = [...ctx.readOnlyDirs];
    this.mode = MODES[ctx.mode] ?? "default";
    this.session = session;
  }
  /** Tells the caller how the call is going (delivered at once). */
  progress(message, data = undefined) {
    report(String(message), data === undefined ? undefined : JSON.stringify(data));
  }
  /** A line in the host's log. */
  log(message, level = "info") {
    logLine(level, message);
  }
}

// What the contract's `result<_, tool-error>` is thrown as.
function toolError(e) {
  if (e instanceof ToolError) return { kind: e.kind, message: e.message };
  // A bug: its stack, for whoever reads the result.
  const what = e instanceof Error ? `${e.name}: ${e.message}` : `a thrown value: ${show(e)}`;
  const stack = e instanceof Error && e.stack ? `\n${String(e.stack).trimEnd()}` : "";
  return { kind: "internal", message: `the tool failed with an exception:\n${what}${stack}` };
}

function block(value) {
  if (value && typeof value === "object" && ["text", "json", "image"].includes(value.tag)) return value;
  return typeof value === "string" ? text(value) : json(value);
}

function output(result) {
  if (result instanceof Output) {
    return {
      content: result.content.map(block),
      structured: result.structured === undefined ? undefined : JSON.stringify(result.structured),
      isError: Boolean(result.isError),
    };
  }
  if (result === undefined || result === null) return { content: [], structured: undefined, isError: false };
  return { content: [block(result)], structured: undefined, isError: false };
}

// The declared answer; else, when the method is left out, the default's
// answer (the same for every input); else none.
function hint(declared, method, fallback) {
  if (typeof declared === "boolean") return declared;
  return typeof method === "function" ? undefined : fallback;
}

function info(t) {
  if (!t.name) throw new TypeError("a tool needs a name");
  const schema = { type: "object", properties: {}, ...(t.inputSchema ?? {}) };
  if (!("additionalProperties" in schema)) schema.additionalProperties = false;
  const paths = Object.entries(t.paths ?? {}).map(([field, access]) => {
    if (!ACCESS.includes(access)) throw new TypeError(`paths.${field}: one of ${ACCESS.join(", ")}`);
    return { field, access };
  });
  return {
    name: t.name,
    aliases: [...(t.aliases ?? [])],
    description: t.description ?? "",
    prompt: t.prompt ?? t.description ?? "",
    searchHint: t.searchHint,
    inputSchema: JSON.stringify(schema),
    outputSchema: t.outputSchema === undefined ? undefined : JSON.stringify(t.outputSchema),
    maxResultSizeChars: t.maxResultSizeChars === undefined ? undefined : BigInt(t.maxResultSizeChars),
    shouldDefer: Boolean(t.shouldDefer),
    alwaysLoad: Boolean(t.alwaysLoad),
    interruptBehavior: t.cancelOnInterrupt === false ? "block" : "cancel",
    readOnlyHint: hint(t.readOnly, t.isReadOnly, false),
    concurrencySafeHint: hint(t.concurrencySafe, t.isConcurrencySafe, false),
    destructiveHint: typeof t.destructive === "boolean" ? t.destructive : undefined,
    inputRoles: { paths, command: t.command, addresses: [...(t.addresses ?? [])] },
    cancelsSiblingsOnFailure: Boolean(t.cancelsSiblingsOnFailure),
    reuseInstance: Boolean(t.reuseInstance),
    // The host skips the exports a tool leaves out: each call into the
    // engine costs about as much as a small call's own work.
    validatesInput: typeof t.validateInput === "function",
    checksPermissions: typeof t.checkPermissions === "function",
  };
}

/**
 * The contract's `tool` export for a declaration: export it as `tool` from
 * the app module (`export const tool = define({...})`).
 *
 * Declaration fields: `name` (letters, digits, `_`, `-`; at most 64),
 * `description` (one line), `prompt` (what the model reads; defaults to the
 * description), `inputSchema` (a JSON Schema object), and optionally
 * `aliases`, `searchHint`, `outputSchema`, `maxResultSizeChars`,
 * `shouldDefer`, `alwaysLoad`, `cancelOnInterrupt` (true), `readOnly` /
 * `concurrencySafe` / `destructive` (true or false when the answer is the
 * same for every input: told to the host once, which then stops asking),
 * `paths` ({field: "read" | "search" | "edit"}), `command` (the field holding
 * a shell command), `addresses` (fields holding URLs or host names),
 * `cancelsSiblingsOnFailure`, `reuseInstance` (true lets one warm instance
 * serve a session's calls one after another, saving the engine's start-up on
 * each: only for a tool whose calls leave nothing behind in module state
 * that changes a later call; keep what must last in `ctx.session`). Methods, all optional but `call`:
 * `isEnabled()`, `isReadOnly(input)`, `isConcurrencySafe(input)`,
 * `isDestructive(input)`, `validateInput(input, ctx)` (throw `ToolError` to
 * refuse), `checkPermissions(input, ctx)` (undefined, `["deny", reason]` or
 * `["ask", message]`), `call(input, ctx)`.
 */
export function define(t) {
  const classify = (name, fallback) => (input) => {
    const method = t[name];
    if (typeof method !== "function") return fallback;
    // A classification that fails answers the safe way.
    try {
      return Boolean(method.call(t, JSON.parse(input)));
    } catch (e) {
      logLine("warn", `${name} failed, answering false: ${show(e)}`);
      return false;
    }
  };
  return {
    info() {
      return info(t);
    },
    isEnabled() {
      return typeof t.isEnabled === "function" ? Boolean(t.isEnabled()) : true;
    },
    isConcurrencySafe: classify("isConcurrencySafe", t.concurrencySafe === true),
    isReadOnly: classify("isReadOnly", t.readOnly === true),
    isDestructive: classify("isDestructive", t.destructive === true),
    validateInput(input, ctx) {
      if (typeof t.validateInput !== "function") return;
      try {
        t.validateInput(JSON.parse(input), new Context(ctx));
      } catch (e) {
        throw toolError(e);
      }
    },
    checkPermissions(input, ctx) {
      if (typeof t.checkPermissions !== "function") return { tag: "passthrough" };
      let answer;
      try {
        answer = t.checkPermissions(JSON.parse(input), new Context(ctx));
      } catch (e) {
        return { tag: "deny", val: `${t.name} could not decide: ${show(e)}` };
      }
      if (!Array.isArray(answer)) return { tag: "passthrough" };
      const [what, why] = answer;
      if (what === "deny") return { tag: "deny", val: String(why) };
      if (what === "ask") return { tag: "ask", val: { message: String(why), suggestedRules: [] } };
      return { tag: "passthrough" };
    },
    call(input, ctx) {
      if (typeof t.call !== "function") {
        throw { kind: "internal", message: `${t.name} does not implement call` };
      }
      try {
        return output(t.call(JSON.parse(input), new Context(ctx)));
      } catch (e) {
        throw toolError(e);
      }
    },
  };
}
