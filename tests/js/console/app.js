// A JavaScript test tool written to the contract by hand, without the
// helper, as a tool author who does not know toolhost's SDK writes one: it
// uses `console` as in a browser (where the engine has none, the engine
// reports the ReferenceError on its stderr), throws a huge error (reported
// on stderr, past what the host keeps), and leaves its answer a promise that
// nothing settles (reported on stderr too). On the component-model async
// ABI each of these writes waits in the host from inside the async ABI.

const schema = {
  type: "object",
  properties: { do: { enum: ["log", "error", "flood", "throw-large", "ok", "never"] }, n: { type: "integer" } },
  required: ["do"],
  additionalProperties: false,
};

const text = (value) => ({ content: [{ tag: "text", val: value }], structured: undefined, isError: false });

export const tool = {
  info() {
    return {
      name: "JsConsole",
      aliases: [],
      description: "Writes through the engine's console.",
      prompt: "Writes through the engine's console.",
      searchHint: undefined,
      inputSchema: JSON.stringify(schema),
      outputSchema: undefined,
      maxResultSizeChars: undefined,
      shouldDefer: false,
      alwaysLoad: false,
      interruptBehavior: "cancel",
      readOnlyHint: true,
      concurrencySafeHint: true,
      destructiveHint: false,
      inputRoles: { paths: [], command: undefined, addresses: [] },
      cancelsSiblingsOnFailure: false,
      reuseInstance: false,
      validatesInput: false,
      checksPermissions: false,
    };
  },
  isEnabled: () => true,
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  isDestructive: () => false,
  validateInput() {},
  checkPermissions: () => ({ tag: "passthrough" }),
  call(input) {
    const { do: what, n } = JSON.parse(input);
    switch (what) {
      case "log":
        console.log("hello from the engine's console");
        return text("logged");
      case "error":
        console.error("an error line from the engine's console");
        return text("logged to stderr");
      case "flood":
        for (let i = 0; i < n; i++) console.log(`line ${i} of ${n}`);
        return text(`logged ${n} lines`);
      case "throw-large":
        throw new Error("x".repeat(200 * 1024));
      case "never":
        return new Promise(() => {});
      default:
        return text("ok");
    }
  },
};
