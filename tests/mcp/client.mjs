// Drives `toolhost serve` with the official MCP TypeScript SDK (the v2
// client, @modelcontextprotocol/client), over stdio or streamable HTTP.
//
//     node client.mjs CONFIG.json
//
// CONFIG: {"command": [...], "env": {...}} for stdio or {"url": URL, "token":
// TOKEN?} for HTTP, with "workspace": DIR, "plugins": DIR, "echo": FILE and
// "mode": "auto", "2026-07-28" (pinned) or "legacy". Prints `PASS <name>` per
// check; any failure throws (exit status 1). tests/all/mcp.rs runs it.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const ws = (rel) => path.join(cfg.workspace, rel);
const passed = (name) => console.log(`PASS ${name}`);
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const ok = (r, name) => {
  assert.ok(!r.isError, `${name} failed: ${text(r)}`);
  return text(r);
};
const err = (r, name, needle) => {
  assert.ok(r.isError, `${name} should have failed: ${text(r)}`);
  if (needle) assert.ok(text(r).includes(needle), `${name}: expected ${needle} in ${text(r)}`);
  return text(r);
};

const stdio = Array.isArray(cfg.command);
const transport = stdio
  ? new StdioClientTransport({ command: cfg.command[0], args: cfg.command.slice(1), env: cfg.env, stderr: 'ignore' })
  : new StreamableHTTPClientTransport(new URL(cfg.url), {
      requestInit: { headers: cfg.token ? { Authorization: `Bearer ${cfg.token}` } : {} },
    });
const mode = cfg.mode === 'auto' || cfg.mode === 'legacy' ? cfg.mode : { pin: cfg.mode };
const client = new Client(
  { name: 'toolhost-test', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode } },
);
const asked = [];
client.setRequestHandler('elicitation/create', async (request) => {
  const message = request.params.message;
  asked.push(message);
  const decision = message.includes('allowed.txt') ? 'allow once' : 'deny';
  return { action: 'accept', content: { decision, reason: 'not that one' } };
});
let changed = 0;
client.setNotificationHandler('notifications/tools/list_changed', () => {
  changed += 1;
});

await client.connect(transport);
const version = client.getNegotiatedProtocolVersion();
const expected = cfg.mode === 'legacy' ? '2025-11-25' : '2026-07-28';
assert.equal(version, expected);
const modern = version === '2026-07-28';
passed(`connected at ${version}`);

// State: a handle over HTTP on 2026-07-28; the connection's otherwise.
let handle;
if (modern && !stdio) {
  const started = await client.callTool({ name: 'StartSession', arguments: {} });
  handle = started.structuredContent.toolhost_session;
  assert.match(handle, /^session_[a-z2-7]{26}$/);
}
const call = (name, args, options) =>
  client.callTool({ name, arguments: handle ? { ...args, toolhost_session: handle } : args }, options);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
for (const name of ['Bash', 'Edit', 'Read', 'Write']) assert.ok(names.includes(name), names.join(' '));
assert.equal(names.includes('StartSession'), modern);
passed('list tools');

assert.ok(ok(await call('Read', { file_path: ws('a.txt') }), 'Read').includes('hello'));
ok(await call('Edit', { file_path: ws('a.txt'), old_string: 'hello', new_string: 'howdy' }), 'Edit');
assert.equal(fs.readFileSync(ws('a.txt'), 'utf8'), 'howdy\n');
err(await call('Read', {}), 'Read {}', 'file_path');
passed('Read then Edit');

// Progress, spaced out (the client drops notifications that arrive with the result).
const notes = [];
const long = await call(
  'Bash',
  { command: 'for i in 1 2 3; do echo line$i; sleep 0.3; done' },
  { onprogress: (p) => notes.push(p) },
);
ok(long, 'long Bash');
assert.ok(notes.length >= 1, JSON.stringify(notes));
passed('progress');

// An ask: answered through the client (elicitation, or input-required and a retry).
ok(await call('Bash', { command: `rm -f ${ws('allowed.txt')}` }), 'approved');
assert.ok(!fs.existsSync(ws('allowed.txt')));
err(await call('Bash', { command: `rm -f ${ws('kept.txt')}` }), 'refused', 'not that one');
assert.ok(fs.existsSync(ws('kept.txt')));
assert.equal(asked.length, 2);
passed('asks answered through the client');

// Cancellation stops the process.
const pidFile = ws('cancel.pid');
const abort = new AbortController();
const cancelled = call('Bash', { command: `echo $$ > ${pidFile}; exec sleep 30` }, { signal: abort.signal });
await new Promise((r) => setTimeout(r, 1000));
abort.abort('test');
await cancelled.then(
  () => assert.fail('the call ended before it was cancelled'),
  () => {},
);
const pid = Number(fs.readFileSync(pidFile, 'utf8'));
const alive = () => {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1][0] !== 'Z';
  } catch {
    return false;
  }
};
for (let i = 0; i < 100 && alive(); i++) await new Promise((r) => setTimeout(r, 50));
assert.ok(!alive(), `process ${pid} still runs after the cancellation`);
ok(await call('Bash', { command: 'echo hi' }), 'after cancel');
passed('cancellation stops the process');

// Hot loading: a change is heard (on a listen stream on 2026-07-28).
const sub = modern ? await client.listen({ toolsListChanged: true }) : null;
if (sub) assert.equal(sub.honoredFilter.toolsListChanged, true);
const target = path.join(cfg.plugins, 'echo.wasm');
fs.copyFileSync(cfg.echo, path.join(cfg.plugins, '.echo.partial'));
fs.renameSync(path.join(cfg.plugins, '.echo.partial'), target);
for (let i = 0; i < 600 && changed === 0; i++) await new Promise((r) => setTimeout(r, 100));
assert.ok(changed > 0, 'no notifications/tools/list_changed after adding echo.wasm');
const listed = (await client.listTools({}, { cacheMode: 'refresh' })).tools.map((t) => t.name);
assert.ok(listed.includes('Echo'), listed.join(' '));
assert.equal(ok(await call('Echo', { text: 'hot' }), 'Echo'), 'hot');
if (sub) await sub.close();
passed('hot reload heard');

await client.close();
