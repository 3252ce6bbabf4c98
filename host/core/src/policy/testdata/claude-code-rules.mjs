#!/usr/bin/env node
// Fills in what Claude Code's own rule parser returns for every rule of
// claude-code-rules.json (beside this file), by running the parser from an
// extracted Claude Code package. Nothing of Claude Code is kept in this
// repository: its code is read from the paths given, at run time.
//
//   node claude-code-rules.mjs --chunks DIR --src88 DIR --esbuild DIR [--add FILE]
//
// --chunks   the JavaScript modules of Claude Code 2.1.328, taken out of the
//            Bun executable of @anthropic-ai/claude-code-linux-x64@2.1.328
//            (the `.bun` section's module graph: chunk-*.js, as
//            tests/compat/claude-code-2.1.328.md §0 tells how). The parser is
//            `EM`/`Dr` in chunk-f8hbm97s.js, the settings check `PBe` in
//            chunk-8kxb3xc5.js.
// --src88    the TypeScript of Claude Code 2.1.88 (`src/` of the sources in
//            cli.js.map of @anthropic-ai/claude-code@2.1.88):
//            utils/permissions/permissionRuleParser.ts and
//            utils/settings/permissionValidation.ts.
// --esbuild  a directory whose node_modules has esbuild (`npm install
//            esbuild`), which links those modules into one for Node.
// --add      a file of rules to add, one JSON string a line.
//
// For each rule it records, per version: `tool` and `content` as the parser
// returns them, `error` when the settings check refuses the rule in deny and
// ask lists (its message as Claude Code prints it), and `allow_error` when
// it refuses it in allow lists only. The fields `toolhost` and `why` (the
// differences toolhost keeps) are left as they are.

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
for (const need of ['chunks', 'src88', 'esbuild']) {
  if (!args[need]) throw new Error(`--${need} DIR is needed (see the head of this file)`);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const corpusFile = path.join(here, 'claude-code-rules.json');
const esbuild = createRequire(path.resolve(args.esbuild) + '/')('esbuild');

/** Links `entry` with esbuild and imports it. */
async function load(name, entry, loader, plugin) {
  const out = await esbuild.build({
    stdin: { contents: entry, resolveDir: here, loader },
    bundle: true, write: false, format: 'esm', platform: 'node', target: 'node20', logLevel: 'error',
    plugins: [{ name, setup: plugin }],
  });
  const file = path.join(fs.mkdtempSync(path.join(process.env.TMPDIR || '/tmp', 'cc-rules-')), `${name}.mjs`);
  fs.writeFileSync(file, out.outputFiles[0].text);
  return import(pathToFileURL(file).href);
}

// 2.1.328: Bun's modules import each other as /$bunfs/root/NAME, and some
// load others with Bun's `import.meta.require`, made an import here.
const chunks = path.resolve(args.chunks);
const v328 = await load(
  'v328',
  `export { Dr } from '/$bunfs/root/chunk-f8hbm97s.js'; export { PBe } from '/$bunfs/root/chunk-8kxb3xc5.js';`,
  'js',
  (b) => {
    b.onResolve({ filter: /^\/\$bunfs\/root\// }, (a) => ({ path: path.join(chunks, a.path.slice('/$bunfs/root/'.length)) }));
    b.onResolve({ filter: /^bun:/ }, (a) => ({ path: a.path, external: true }));
    b.onLoad({ filter: /\.js$/ }, (a) => {
      const required = [];
      const text = fs.readFileSync(a.path, 'utf8').replace(/import\.meta\.require\(("[^"]+")\)/g, (_, p) => {
        required.push(p);
        return `__required${required.length - 1}`;
      });
      return { contents: required.map((p, i) => `import * as __required${i} from ${p};`).join('') + text, loader: 'js' };
    });
  },
);

// 2.1.88: its TypeScript, with `bun:bundle`'s feature flags off and the
// packages it imports for other things stubbed.
const src88 = path.resolve(args.src88);
const v88 = await load(
  'v88',
  `export { permissionRuleValueFromString } from '${src88}/utils/permissions/permissionRuleParser.ts';
   export { validatePermissionRule } from '${src88}/utils/settings/permissionValidation.ts';`,
  'ts',
  (b) => {
    b.onResolve({ filter: /^bun:bundle$/ }, () => ({ path: 'bun:bundle', namespace: 'flags' }));
    b.onResolve({ filter: /^[^./]/ }, (a) => ({ path: a.path, namespace: 'stub' }));
    b.onResolve({ filter: /\.js$/ }, (a) => {
      const ts = path.resolve(a.resolveDir, a.path.replace(/\.js$/, '.ts'));
      return [ts, `${ts}x`].filter((f) => fs.existsSync(f)).map((f) => ({ path: f }))[0];
    });
    b.onLoad({ filter: /.*/, namespace: 'flags' }, () => ({ contents: 'export const feature = () => false', loader: 'js' }));
    b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({
      contents: 'const p = new Proxy(function () {}, { get: (t, k) => (k === "__esModule" ? false : p), apply: () => p }); module.exports = p;',
      loader: 'js',
    }));
  },
);

/** A settings check's answer as Claude Code prints it (zod issue text). */
function message(check) {
  if (check.valid) return undefined;
  let text = check.error;
  if (check.suggestion) text += `. ${check.suggestion}`;
  if (check.examples?.length) text += `. Examples: ${check.examples.join(', ')}`;
  return text;
}

function outcome(parsed, deny, allow) {
  const out = { tool: parsed.toolName };
  if (parsed.ruleContent !== undefined) out.content = parsed.ruleContent;
  const [error, allowError] = [message(deny), message(allow)];
  if (error !== undefined) out.error = error;
  if (allowError !== undefined && allowError !== error) out.allow_error = allowError;
  return out;
}

const corpus = JSON.parse(fs.readFileSync(corpusFile, 'utf8'));
if (args.add) {
  const known = new Set(corpus.rules.map((r) => r.rule));
  for (const line of fs.readFileSync(args.add, 'utf8').split('\n').filter((l) => l.trim())) {
    const rule = JSON.parse(line);
    if (!known.has(rule)) corpus.rules.push({ rule }), known.add(rule);
  }
}
corpus.rules = corpus.rules.map(({ rule, toolhost, why }) => ({
  rule,
  '2.1.328': outcome(v328.Dr(rule), v328.PBe(rule), v328.PBe(rule, 'allow')),
  '2.1.88': outcome(v88.permissionRuleValueFromString(rule), v88.validatePermissionRule(rule), v88.validatePermissionRule(rule)),
  ...(toolhost && { toolhost, why }),
}));
corpus.generated = new Date().toISOString().slice(0, 10);

// One rule a line, for diffs that show what changed.
const lines = corpus.rules.map((r) => `    ${JSON.stringify(r)}`);
const { rules, ...head } = corpus;
const headText = JSON.stringify(head, null, 2).replace(/\n}$/, '');
fs.writeFileSync(corpusFile, `${headText},\n  "rules": [\n${lines.join(',\n')}\n  ]\n}\n`);
console.log(`${corpus.rules.length} rules written to ${corpusFile}`);
