// Loads a Chrome trace-event file with Chrome DevTools' trace engine (the Performance panel's parser, published on
// npm as @paulirish/trace_engine) and prints what the engine made of it as JSON, for tests/export/test_devtools.py.
//
//   node tests/export/devtools_trace.mjs ENGINE_DIR TRACE(.json|.json.gz) OUT.json
//
// ENGINE_DIR: the installed package's folder (node_modules/@paulirish/trace_engine). Nothing here re-implements the
// format: the summary is read off the engine's own model — its processes and threads (RendererHandler: every
// thread of a generic, non-browser trace), each thread's slices as the engine's tree holds them (sorted and
// nested by TreeHelpers.treify, which leaves out a slice that crosses its parent or starts before it), process and
// thread names (MetaHandler), the trace's bounds, and the async b/e pairs as the engine's own pairing helper
// (Helpers.Trace.createMatchedSortedSyntheticEvents) matches them.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

const [engineDir, tracePath, outPath] = process.argv.slice(2);
if (!engineDir || !tracePath || !outPath) {
  console.error('usage: devtools_trace.mjs ENGINE_DIR TRACE OUT.json');
  process.exit(2);
}
const Trace = await import(path.resolve(engineDir, 'models/trace/trace.js'));
const {polyfillDOMRect} = await import(path.resolve(engineDir, 'analyze-trace.mjs'));
polyfillDOMRect();  // the engine expects a browser's DOMRect (the package's own runner does the same)
const pkg = JSON.parse(fs.readFileSync(path.resolve(engineDir, 'package.json'), 'utf8'));

let raw = fs.readFileSync(tracePath);
if (raw[0] === 0x1f && raw[1] === 0x8b) {
  raw = zlib.gunzipSync(raw);
}
const file = JSON.parse(raw.toString('utf8'));
const events = Array.isArray(file) ? file : file.traceEvents;

// What the engine complains about while parsing (e.g. "Begin/End events mismatch") is part of the answer.
const complaints = [];
for (const level of ['error', 'warn']) {
  console[level] = (...parts) => complaints.push(`${level}: ${parts.map(String).join(' ')}`);
}

const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(events);
const parsed = model.parsedTrace();
const data = parsed.data ?? parsed;

const argsIndex = new Map();  // distinct args (less the per-launch correlation id) → index in `args`
const args = [];
function argsOf(entry) {
  if (!entry.args || typeof entry.args !== 'object') {
    return -1;
  }
  const {correlation, ...rest} = entry.args;
  const key = JSON.stringify(rest);
  let got = argsIndex.get(key);
  if (got === undefined) {
    got = args.length;
    argsIndex.set(key, got);
    args.push(rest);
  }
  return got;
}

const threads = [];
for (const [pid, proc] of data.Renderer.processes) {
  for (const [tid, thread] of proc.threads) {
    const rows = [];  // [name, cat, ts (µs), dur (µs), depth, parent row (-1: a root), args index, cname]
    const index = new Map();
    const stack = [...(thread.tree?.roots ?? [])].reverse().map(node => [node, -1]);
    while (stack.length) {  // depth first, in the tree's order
      const [node, parent] = stack.pop();
      const e = node.entry;
      index.set(node, rows.length);
      rows.push([e.name, e.cat ?? null, e.ts, e.dur ?? null, node.depth, parent, argsOf(e), e.cname ?? null]);
      for (let i = node.children.length - 1; i >= 0; i--) {
        stack.push([node.children[i], index.get(node)]);
      }
    }
    threads.push({
      pid, tid, name: thread.name, entries: thread.entries.length, maxDepth: thread.tree?.maxDepth ?? 0, slices: rows,
    });
  }
}

const processes = {};
for (const [pid, event] of data.Meta.processNames) {
  processes[pid] = event.args?.name ?? null;
}
const threadNames = [];
for (const [pid, byTid] of data.Meta.threadsInProcess) {
  for (const [tid, event] of byTid) {
    threadNames.push([pid, tid, event.args?.name ?? null]);
  }
}

const asyncRaw = parsed.traceEvents.filter(e => e.ph === 'b' || e.ph === 'e');
const paired = Trace.Helpers.Trace.createMatchedSortedSyntheticEvents(
    [...asyncRaw].sort((a, b) => a.ts - b.ts));
const counters = parsed.traceEvents.filter(e => e.ph === 'C');

fs.writeFileSync(outPath, JSON.stringify({
  engine: `${pkg.name} ${pkg.version}`,
  generic: data.Meta.traceIsGeneric,
  bounds: [data.Meta.traceBounds.min, data.Meta.traceBounds.max],
  events: parsed.traceEvents.length,
  processes,
  threadNames,
  threads,
  args,
  async: {begins: asyncRaw.filter(e => e.ph === 'b').length, ends: asyncRaw.filter(e => e.ph === 'e').length,
          slices: paired.map(e => [e.pid, e.tid, e.name, e.cat, e.ts, e.dur])},
  counterEvents: counters.length,
  complaints,
}));
