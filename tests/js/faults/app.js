// A JavaScript test tool whose faults the helper must turn into answers: a
// bug in `call` (an internal error with its stack), a thrown non-error, a
// classification that throws (answered false), console output (the host's
// log), a session value over the limit (a tool error).

import { define, ToolError } from "./toolhost.js";

function divide(a, b) {
  return a.value / b.value;
}

export const tool = define({
  name: "JsFaults",
  description: "Misbehaves on request.",
  inputSchema: {
    type: "object",
    properties: { do: { enum: ["bug", "throw-string", "console", "tool-error", "too-large", "ok"] } },
    required: ["do"],
  },
  isConcurrencySafe() {
    throw new Error("cannot tell");
  },
  call(input, ctx) {
    switch (input.do) {
      case "bug":
        return divide(1, undefined);
      case "throw-string":
        throw "not an Error";
      case "console":
        console.log("a line for the log from JsFaults", { n: 1 });
        console.error("an error line");
        return "logged";
      case "tool-error":
        throw new ToolError("the file is gone", "not-found");
      case "too-large":
        ctx.session.set("big", "x".repeat(70 * 1024));
        return "stored";
      default:
        return { fine: true };
    }
  },
});
