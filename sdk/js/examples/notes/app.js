// Notes: a scratchpad the model keeps for the rest of the session.
//
// A model loses what scrolled out of its context; this tool keeps named
// notes for the session, finds them again by words, and forgets them on
// request:
//
//     {"action": "save", "title": "plan", "text": "1. read the tests\n2. ..."}
//     {"action": "search", "query": "tests"}
//     {"action": "get", "title": "plan"}
//     {"action": "list"}
//     {"action": "delete", "title": "plan"}
//
// It shows what the JavaScript helper gives: the schema from a declaration, a
// warm instance reused across the session's calls,
// classifications that depend on the input (listing, reading and searching
// only read and may run beside other calls; saving writes; deleting
// destroys), progress while searching, session state, and `ToolError` for
// the model's mistakes.

import { define, Output, ToolError } from "./toolhost.js";

const PREFIX = "note:";
const MAX_TEXT = 16_000;
const MAX_NOTES = 200;

const READS = new Set(["list", "get", "search"]);

function titleOf(input) {
  const title = String(input.title ?? "").trim();
  if (!title) throw new ToolError(`"${input.action}" needs a "title"`);
  if (title.length > 200) throw new ToolError("a title is at most 200 characters", "too-large");
  return title;
}

function load(ctx, title) {
  const note = ctx.session.getJson(PREFIX + title);
  if (note === undefined) {
    const titles = ctx.session.keys(PREFIX).map((k) => k.slice(PREFIX.length));
    const known = titles.length ? `the notes are: ${titles.join(", ")}` : "there are no notes yet";
    throw new ToolError(`no note titled "${title}"; ${known}`, "not-found");
  }
  return note;
}

function excerpt(text, at, width = 60) {
  const from = Math.max(0, at - width);
  const to = Math.min(text.length, at + width);
  return `${from > 0 ? "…" : ""}${text.slice(from, to).replace(/\s+/g, " ")}${to < text.length ? "…" : ""}`;
}

export const tool = define({
  name: "Notes",
  description: "Keeps named notes for the rest of the session: save, get, list, search and delete them.",
  prompt:
    "Keeps notes that last for the whole session, so plans, findings and decisions survive when earlier " +
    "messages leave your context.\n\n" +
    "- save: store `text` under `title` (replacing a note of that title)\n" +
    "- get: the note titled `title`\n" +
    "- list: every title, newest first, with its size\n" +
    "- search: the notes containing every word of `query` (case-insensitive), with the matching passages\n" +
    "- delete: forget the note titled `title`\n\n" +
    `A note holds at most ${MAX_TEXT} characters; a session holds at most ${MAX_NOTES} notes.`,
  searchHint: "scratchpad memory remember notes",
  // The notes live in session state, nothing in the instance: one warm
  // instance may serve the session's calls.
  reuseInstance: true,
  inputSchema: {
    type: "object",
    properties: {
      action: { enum: ["save", "get", "list", "search", "delete"], description: "What to do" },
      title: { type: "string", description: "The note's title (save, get, delete)" },
      text: { type: "string", description: "The note's text (save)" },
      query: { type: "string", description: "Words to look for (search)" },
    },
    required: ["action"],
  },
  isReadOnly: (input) => READS.has(input.action),
  isConcurrencySafe: (input) => READS.has(input.action),
  isDestructive: (input) => input.action === "delete",

  validateInput(input) {
    if (input.action === "save" && typeof input.text !== "string") throw new ToolError('"save" needs a "text"');
    if (input.action === "search" && !String(input.query ?? "").trim()) {
      throw new ToolError('"search" needs a "query" with at least one word');
    }
  },

  call(input, ctx) {
    switch (input.action) {
      case "save": {
        const title = titleOf(input);
        if (input.text.length > MAX_TEXT) {
          throw new ToolError(`the text has ${input.text.length} characters; a note holds at most ${MAX_TEXT}`, "too-large");
        }
        const replacing = ctx.session.get(PREFIX + title) !== undefined;
        if (!replacing && ctx.session.keys(PREFIX).length >= MAX_NOTES) {
          throw new ToolError(`the session already holds ${MAX_NOTES} notes; delete some first`, "too-large");
        }
        // A counter, not the clock: two saves in the same millisecond keep their order.
        const saved = ctx.session.getJson("saves", 0) + 1;
        ctx.session.setJson("saves", saved);
        ctx.session.setJson(PREFIX + title, { text: input.text, saved });
        return `${replacing ? "Replaced" : "Saved"} "${title}" (${input.text.length} characters).`;
      }
      case "get":
        return load(ctx, titleOf(input)).text;
      case "delete": {
        const title = titleOf(input);
        load(ctx, title);
        ctx.session.remove(PREFIX + title);
        return `Deleted "${title}".`;
      }
      case "list": {
        const notes = ctx.session.keys(PREFIX).map((key) => ({ title: key.slice(PREFIX.length), ...ctx.session.getJson(key) }));
        notes.sort((a, b) => b.saved - a.saved);
        if (notes.length === 0) return "There are no notes yet.";
        const lines = notes.map((n) => `- ${n.title} (${n.text.length} characters)`);
        return new Output(lines.join("\n"), { structured: { titles: notes.map((n) => n.title) } });
      }
      case "search": {
        const words = input.query.toLowerCase().split(/\s+/).filter(Boolean);
        const keys = ctx.session.keys(PREFIX);
        const found = [];
        keys.forEach((key, i) => {
          const note = ctx.session.getJson(key);
          const lower = note.text.toLowerCase();
          if (words.every((w) => lower.includes(w) || key.toLowerCase().includes(w))) {
            const at = Math.max(0, lower.indexOf(words[0]));
            found.push(`- ${key.slice(PREFIX.length)}: ${excerpt(note.text, at)}`);
          }
          ctx.progress(`searched ${i + 1}/${keys.length} notes`, { searched: i + 1, of: keys.length });
        });
        if (found.length === 0) return `No note contains ${words.map((w) => `"${w}"`).join(" and ")}.`;
        return `${found.length} of ${keys.length} notes match:\n${found.join("\n")}`;
      }
    }
    throw new ToolError(`unknown action "${input.action}"`);
  },
});
