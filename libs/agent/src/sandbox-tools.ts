import { SANDBOX_LIMITS, SandboxOp, type ChatAttachment, type ExecResult, type LlmMessage, type MountedSkill, type SandboxBinding, type SandboxReply, type SandboxRequestInput } from '@conveyor/contracts';
import type { ToolDefinition } from './llm-call.js';
import type { ImageSource } from './attachments/index.js';
import { ContentResult, ToolNotFoundError, type ToolBox } from './tools.js';

/** How a run reaches the sandbox role (libs/sandbox's `SandboxClient`). */
export interface SandboxPort {
  call(input: SandboxRequestInput, signal?: AbortSignal): Promise<SandboxReply>;
}

export interface SkillEntry {
  name: string;
  description: string;
  revision: number;
}

/** The installed skills (Postgres, through the runner's cache). */
export interface SkillCatalog {
  list(bound: 'all' | readonly string[]): Promise<SkillEntry[]>;
  instructions(name: string): Promise<(SkillEntry & { instructions: string }) | undefined>;
}

/** One `exec` as the query's timeline and trace show it: never its environment's values. */
export interface ExecRecord {
  command: string;
  exitCode: number | null;
  durationMs: number;
  outputBytes: number;
  limits: string[];
  at: number;
}

export interface SandboxToolsOptions {
  port: SandboxPort;
  binding: SandboxBinding;
  queryId: string;
  skills: SkillCatalog;
  onExec?: (record: ExecRecord) => void;
}

export const SANDBOX_TOOL_NAMES = ['exec', 'read', 'write', 'edit', 'glob', 'grep'] as const;
export const ACTIVATE_TOOL_NAME = 'activate';

/** Where a query's files for the chat go (LangBot's outbox), and where the user's attachments land. */
export const outboxPath = (queryId: string) => `/workspace/outbox/${queryId}`;
export const inboxPath = (queryId: string) => `/workspace/inbox/${queryId}`;

const object = (properties: Record<string, unknown>, required: string[]) => ({ type: 'object', properties, required, additionalProperties: false });

/** LangBot's native sandbox tools, names and argument shapes (`loaders/native.py`), and its `activate`. */
const DEFINITIONS: Record<(typeof SANDBOX_TOOL_NAMES)[number] | typeof ACTIVATE_TOOL_NAME, ToolDefinition> = {
  exec: tool('exec', 'Run a shell command in the sandbox (Python 3 and Node.js are installed). The working folder /workspace keeps its files between calls. Use it for exact computation, data processing and running skill scripts; do not paste code for the user to run.', object({
    command: { type: 'string', description: 'The shell command (sh -c).' },
    workdir: { type: 'string', description: 'Folder to run in, under /workspace.', default: '/workspace' },
    timeout_sec: { type: 'integer', description: `Seconds before the command is killed (at most ${SANDBOX_LIMITS.execTimeoutSecondsMax}).`, minimum: 1, maximum: SANDBOX_LIMITS.execTimeoutSecondsMax, default: SANDBOX_LIMITS.execTimeoutSecondsDefault },
    env: { type: 'object', description: 'Environment variables for the command.', additionalProperties: { type: 'string' }, default: {} },
    description: { type: 'string', description: 'What the command does, in a few words.' },
  }, ['command'])),
  read: tool('read', `Read a text file under /workspace (or /skills/<name> of an activated skill). Returns up to ${SANDBOX_LIMITS.readLinesDefault} lines from offset.`, object({
    path: { type: 'string', description: 'File path, e.g. /workspace/data.csv.' },
    offset: { type: 'integer', description: 'First line to return, 1-based.', minimum: 1, default: 1 },
    limit: { type: 'integer', description: 'Lines to return.', minimum: 1, maximum: SANDBOX_LIMITS.readLinesMax, default: SANDBOX_LIMITS.readLinesDefault },
  }, ['path'])),
  write: tool('write', 'Write a text file under /workspace, creating folders as needed.', object({
    path: { type: 'string', description: 'File path under /workspace.' },
    content: { type: 'string', description: 'The text to write.' },
    mode: { type: 'string', enum: ['overwrite', 'append'], default: 'overwrite' },
  }, ['path', 'content'])),
  edit: tool('edit', 'Replace one exact occurrence of old_string with new_string in a file under /workspace.', object({
    path: { type: 'string', description: 'File path under /workspace.' },
    old_string: { type: 'string', description: 'The exact text to replace; it must occur once.' },
    new_string: { type: 'string', description: 'The replacement.' },
  }, ['path', 'old_string', 'new_string'])),
  glob: tool('glob', `List paths matching a glob pattern (e.g. **/*.py), at most ${SANDBOX_LIMITS.globMatches}.`, object({
    pattern: { type: 'string', description: 'Glob pattern, relative to path.' },
    path: { type: 'string', description: 'Folder to search in.', default: '/workspace' },
  }, ['pattern'])),
  grep: tool('grep', `Search file contents with a regular expression (RE2 syntax), at most ${SANDBOX_LIMITS.grepMatches} matching lines.`, object({
    pattern: { type: 'string', description: 'Regular expression.' },
    path: { type: 'string', description: 'Folder to search in.', default: '/workspace' },
    include: { type: 'string', description: 'Glob of the file names to search, e.g. *.md.' },
  }, ['pattern'])),
  activate: tool('activate', 'Activate a skill by name and return its instructions; its files become readable at /skills/<name> and its scripts runnable with exec.', object({
    skill_name: { type: 'string', description: 'The skill name to activate.' },
  }, ['skill_name'])),
};

function tool(name: string, description: string, parameters: Record<string, unknown>): ToolDefinition {
  return { type: 'function', function: { name, description, parameters } };
}

/** The exec result as the model reads it: status, limits reached, then the output cut to the tool-result bound. */
export function describeExec(r: ExecResult): string {
  const head = [
    `exit code: ${r.exitCode ?? 'none'}${r.signal ? ` (signal ${r.signal})` : ''}, ${Math.round(r.durationMs)} ms`,
    ...(r.limits.length ? [`limits reached: ${r.limits.join(', ')}`] : []),
  ];
  const half = Math.floor((SANDBOX_LIMITS.toolResultBytes - 512) / 2);
  const cut = (text: string, name: string) => (Buffer.byteLength(text) > half ? `${Buffer.from(text).subarray(0, half).toString('utf8')}\n[${name} cut at ${half} bytes of ${Buffer.byteLength(text)}]` : text);
  return [...head, `stdout:\n${cut(r.stdout, 'stdout')}`, `stderr:\n${cut(r.stderr, 'stderr')}`].join('\n');
}

function cutText(text: string): string {
  const max = SANDBOX_LIMITS.toolResultBytes;
  return Buffer.byteLength(text) > max ? `${Buffer.from(text).subarray(0, max).toString('utf8')}\n[cut at ${max} bytes]` : text;
}

/** The model's arguments as a sandbox operation; a bad one throws with the key and the reason. */
function operation(name: string, args: Record<string, unknown>): SandboxOp {
  const renamed: Record<string, unknown> = { op: name, ...args };
  if (name === 'exec') {
    renamed.timeoutSec = args.timeout_sec;
    delete renamed.timeout_sec;
    delete renamed.description;
  }
  if (name === 'edit') {
    renamed.oldString = args.old_string;
    renamed.newString = args.new_string;
    delete renamed.old_string;
    delete renamed.new_string;
  }
  for (const key of Object.keys(renamed)) if (renamed[key] === undefined || renamed[key] === null) delete renamed[key];
  const parsed = SandboxOp.safeParse(renamed);
  if (!parsed.success) throw new Error(`invalid arguments for ${name}: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/** Hides the values of variables that look like credentials in a command shown in timelines. */
export function redactCommand(command: string): string {
  return command
    .replace(/\b([A-Za-z_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASS)[A-Za-z_]*)=("[^"]*"|'[^']*'|\S+)/gi, '$1=***')
    .replace(/(authorization:\s*(?:bearer|basic)\s+)\S+/gi, '$1***')
    .slice(0, 200);
}

/**
 * The sandbox's tools for one run, and the system text that introduces them (LangBot's sandbox
 * guidance and its skill index: names and descriptions only, until the model activates a skill).
 * An activated skill is mounted into every later call of the run.
 */
export async function sandboxTools(o: SandboxToolsOptions): Promise<{ box: ToolBox; guidance: string }> {
  const skills = await o.skills.list(o.binding.skills);
  const active = new Map<string, MountedSkill>();
  const definitions = [...SANDBOX_TOOL_NAMES.map((n) => DEFINITIONS[n]), ...(skills.length ? [DEFINITIONS.activate] : [])];
  const call = (op: SandboxOp, signal?: AbortSignal) =>
    o.port.call({ v: 1, workspace: o.binding.workspace, network: o.binding.network, skills: [...active.values()], queryId: o.queryId, call: op }, signal);
  const box: ToolBox = {
    definitions: () => definitions,
    call: async (name, args, signal) => {
      if (name === ACTIVATE_TOOL_NAME && skills.length) return activate(String(args.skill_name ?? ''));
      if (!(SANDBOX_TOOL_NAMES as readonly string[]).includes(name)) throw new ToolNotFoundError(name);
      const op = operation(name, args);
      const at = Date.now();
      const reply = await call(op, signal);
      if (!reply.ok) throw new Error(`${reply.code}: ${reply.error}`);
      if (op.op === 'exec' && reply.exec) {
        o.onExec?.({ command: redactCommand(op.command), exitCode: reply.exec.exitCode, durationMs: reply.exec.durationMs, outputBytes: reply.exec.outputBytes, limits: reply.exec.limits, at });
        return new ContentResult([{ type: 'text', text: describeExec(reply.exec) }]);
      }
      return new ContentResult([{ type: 'text', text: cutText(reply.text ?? '') || '(empty)' }]);
    },
  };
  const activate = async (skillName: string) => {
    const bound = skills.find((s) => s.name === skillName);
    const skill = bound && (await o.skills.instructions(skillName));
    if (!skill) throw new Error(`no skill named ${JSON.stringify(skillName)} is available; available: ${skills.map((s) => s.name).join(', ')}`);
    active.set(skill.name, { name: skill.name, revision: skill.revision });
    const text = `# Skill: ${skill.name}\n\n${skill.instructions}\n\nThe skill's files are at /skills/${skill.name} (read-only): list them with glob, read them with read, run its scripts with exec.`;
    return new ContentResult([{ type: 'text', text: cutText(text) }]);
  };
  const guidance = [
    'You have a sandbox: a Linux shell with Python 3 and Node.js (the exec tool) and a workspace at /workspace that keeps its files between calls and messages.',
    'Use exec for exact computation and data work instead of guessing; do not paste scripts for the user to run.',
    `To send a file to the user, write it into ${outboxPath(o.queryId)}/.`,
    ...(o.binding.network ? [] : ['Commands have no network access.']),
    ...(skills.length
      ? ['', 'Skills you can activate with the activate tool (read the instructions it returns before acting):', ...skills.map((s) => `- ${s.name}: ${s.description}`)]
      : []),
  ].join('\n');
  return { box, guidance };
}

/** Tool boxes side by side: definitions of all, a call routed to the first box that has the name. */
export function mergeToolBoxes(...boxes: ToolBox[]): ToolBox {
  return {
    definitions: () => boxes.flatMap((b) => b.definitions()),
    call: async (name, args, signal) => {
      for (const b of boxes) if (b.definitions().some((d) => d.function.name === name)) return b.call(name, args, signal);
      throw new ToolNotFoundError(name);
    },
  };
}

const OUTBOX_MIMES: Record<string, string> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp',
  pdf: 'application/pdf', csv: 'text/csv', txt: 'text/plain', md: 'text/markdown', json: 'application/json',
  html: 'text/html', zip: 'application/zip', xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', mp3: 'audio/mpeg', wav: 'audio/wav',
};

/**
 * Puts the files the user sent into `/workspace/inbox/<query id>/` and tells the model where they
 * are (LangBot's text), appended to the user's turn. A failure is the model's to hear about, not the
 * run's end: the note says the files could not be saved.
 */
export async function withInbox(port: SandboxPort, binding: SandboxBinding, queryId: string, turn: LlmMessage, images: ImageSource, signal?: AbortSignal): Promise<LlmMessage> {
  const inbox: Array<ChatAttachment & { error?: string }> = await Promise.all((binding.inbox ?? []).map((f) => (f.base64 || !f.url ? f : linkedImage(f, images, signal))));
  const readable = inbox.filter((f) => f.base64 !== '');
  if (inbox.length === 0) return turn;
  const files = readable.map((f) => ({ path: `${inboxPath(queryId)}/${f.name}`, base64: f.base64, bytes: Math.floor((f.base64.length * 3) / 4), type: f.mime.startsWith('image/') ? 'image' : 'file' }));
  if (files.length === 0) return appendText(turn, `The user sent ${inbox.length} attachment(s) that could not be read: ${inbox.map((f) => f.error).filter(Boolean).join('; ')}`);
  const reply = await port.call({ v: 1, workspace: binding.workspace, network: binding.network, queryId, call: { op: 'put', files: files.map(({ path, base64 }) => ({ path, base64 })) } }, signal).catch((err: Error) => ({ ok: false as const, error: err.message }));
  const note = reply.ok
    ? ['The user sent attachments. They have been saved into the sandbox and are available to the exec/read/write tools at these paths:', ...files.map((f) => `- ${f.type}: ${f.path} (${f.bytes} bytes)`), `Write any files for the user into ${outboxPath(queryId)}/.`].join('\n')
    : `The user sent ${files.length} attachment(s), but they could not be saved into the sandbox: ${'error' in reply ? reply.error : ''}`;
  return appendText(turn, note);
}

function appendText(turn: LlmMessage, note: string): LlmMessage {
  const content = typeof turn.content === 'string' || turn.content === null ? [{ type: 'text' as const, text: turn.content ?? '' }] : turn.content;
  return { ...turn, content: [...content, { type: 'text', text: `\n\n${note}` }] };
}

/** An image the platform only linked to, read within the runner's image bounds (size, type, addresses). */
async function linkedImage(f: ChatAttachment, images: ImageSource, signal?: AbortSignal): Promise<ChatAttachment & { error?: string }> {
  try {
    const image = await images.fetch(f.url!, signal);
    const [, mime = 'image/png', base64 = ''] = /^data:([^;]+);base64,(.*)$/s.exec(image.dataUrl) ?? [];
    return { name: `${f.name}.${mime.split('/')[1]?.replace('jpeg', 'jpg') ?? 'png'}`, mime, base64 };
  } catch (err) {
    return { ...f, error: (err as Error).message };
  }
}

/** Reads and empties the query's outbox: the files go to the chat with the answer. */
export async function takeOutbox(port: SandboxPort, binding: SandboxBinding, queryId: string, signal?: AbortSignal): Promise<ChatAttachment[]> {
  const reply = await port.call({ v: 1, workspace: binding.workspace, network: binding.network, queryId, call: { op: 'take', path: outboxPath(queryId) } }, signal);
  if (!reply.ok) throw new Error(`${reply.code}: ${reply.error}`);
  return (reply.files ?? []).map((f) => {
    const name = f.path.split('/').pop() ?? f.path;
    return { name, mime: OUTBOX_MIMES[name.split('.').pop()?.toLowerCase() ?? ''] ?? 'application/octet-stream', base64: f.base64 };
  });
}
