/**
 * A stdio MCP server with no dependencies, as the source text of one `node -e` program: it runs where
 * nothing of this repository is mounted (inside the sandbox). It speaks MCP's JSON-RPC over stdio
 * (initialize, ping, tools/list, tools/call) with two tools:
 * - `whereami`: the host name, user id, working folder, environment variable names and an id of this
 *   process's own, as JSON;
 * - `dial`: opens a TCP connection to `host`:`port` and says whether it connected.
 */
export const BARE_MCP_SERVER_SOURCE = String.raw`
const os = require('node:os'), net = require('node:net'), readline = require('node:readline');
const started = Math.random().toString(36).slice(2);
const tools = [
  { name: 'whereami', description: 'Where this server runs', inputSchema: { type: 'object', properties: {} } },
  { name: 'dial', description: 'Connect to host:port', inputSchema: { type: 'object', properties: { host: { type: 'string' }, port: { type: 'number' } }, required: ['host', 'port'] } },
];
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const text = (t) => ({ content: [{ type: 'text', text: t }] });
function dial(host, port) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: 3000 });
    s.on('connect', () => { s.destroy(); resolve('connected'); });
    s.on('timeout', () => { s.destroy(); resolve('timeout'); });
    s.on('error', (e) => resolve('error ' + e.code));
  });
}
async function answer(m) {
  if (m.method === 'initialize') return { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'bare', version: '1.0.0' } };
  if (m.method === 'ping') return {};
  if (m.method === 'tools/list') return { tools };
  if (m.method === 'tools/call' && m.params.name === 'whereami') {
    return text(JSON.stringify({ hostname: os.hostname(), uid: process.getuid(), cwd: process.cwd(), env: Object.keys(process.env).sort(), started }));
  }
  if (m.method === 'tools/call' && m.params.name === 'dial') return text(await dial(m.params.arguments.host, m.params.arguments.port));
  throw Object.assign(new Error('no such method ' + m.method), { code: -32601 });
}
readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  try { send({ jsonrpc: '2.0', id: m.id, result: await answer(m) }); }
  catch (e) { send({ jsonrpc: '2.0', id: m.id, error: { code: e.code || -32603, message: e.message } }); }
});
`;
