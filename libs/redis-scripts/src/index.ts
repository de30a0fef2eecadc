import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cluster, type Redis } from 'ioredis';

/**
 * A client of a single Redis (or a Sentinel set's master) or of a Redis Cluster: the commands are
 * the same; on a cluster a script's keys must share one hash slot.
 */
export type RedisClient = Redis | Cluster;

/**
 * Whether one server holds every hash slot (a single Redis or a Sentinel set's master), so a script may
 * touch keys of different slots; a Redis Cluster refuses that (CROSSSLOT).
 */
export function holdsEverySlot(redis: RedisClient): boolean {
  return !(redis instanceof Cluster);
}


const shas = new Map<string, string>();

function sha1(script: string): string {
  let sha = shas.get(script);
  if (!sha) {
    sha = createHash('sha1').update(script).digest('hex');
    shas.set(script, sha);
  }
  return sha;
}

/**
 * Runs a Lua script by its SHA (EVALSHA), sending the body only when the server does not know it yet.
 * Every lease, window and delivery step is a script on the per-message path; sending their bodies
 * each time was the dispatcher's largest CPU cost.
 */
export async function evalScript(redis: RedisClient, script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown> {
  try {
    return await redis.evalsha(sha1(script), numKeys, ...args);
  } catch (err) {
    if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
    return redis.eval(script, numKeys, ...args);
  }
}

/** `--- @include "<name>"` on a line of its own: replaced by `includes/<name>.lua` of the script's folder. */
const INCLUDE_LINE = /^--- @include "([a-z0-9-]+)"\s*$/gm;
/** Includes may include others; a cycle stops here instead of growing without bound. */
const MAX_INCLUDE_DEPTH = 4;

/**
 * The script's body with its includes expanded, each fragment once (a fragment included by two
 * includes of one script is inserted at the first place only), as BullMQ's `src/commands/includes`.
 */
export function expandIncludes(body: string, dir: string, seen: Set<string> = new Set(), depth = 0): string {
  return body.replace(INCLUDE_LINE, (_line, name: string) => {
    if (depth >= MAX_INCLUDE_DEPTH) throw new Error(`Lua include ${name}: includes nest deeper than ${MAX_INCLUDE_DEPTH}`);
    if (seen.has(name)) return '';
    seen.add(name);
    const fragment = readFileSync(path.join(dir, 'includes', `${name}.lua`), 'utf8');
    return expandIncludes(fragment, dir, seen, depth + 1).trimEnd();
  });
}

/**
 * A Lua script kept in its own file, named `<name>-<number of keys>.lua` with a KEYS/ARGV header
 * comment (BullMQ's convention), its shared fragments included, loaded once and run by SHA.
 */
export class RedisScript {
  readonly name: string;
  readonly numberOfKeys: number;
  readonly body: string;

  constructor(file: string) {
    const match = /^(.+)-(\d+)\.lua$/.exec(path.basename(file));
    if (!match) throw new Error(`${file}: a script file is named <name>-<number of keys>.lua`);
    this.name = match[1];
    this.numberOfKeys = Number(match[2]);
    this.body = expandIncludes(readFileSync(file, 'utf8'), path.dirname(file));
  }

  run(redis: RedisClient, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    if (keys.length !== this.numberOfKeys) throw new Error(`script ${this.name} takes ${this.numberOfKeys} keys, got ${keys.length}`);
    return evalScript(redis, this.body, this.numberOfKeys, ...keys, ...args);
  }
}

/**
 * Loads the named scripts of a folder (e.g. `new URL('../lua/', import.meta.url)`): `{ enqueue: … }`
 * from `reply-enqueue-3.lua`. A missing file fails at start-up, not on the first message.
 */
export function loadScripts<N extends string>(folder: URL, names: readonly N[]): Record<N, RedisScript> {
  const dir = fileURLToPath(folder);
  const files = readdirSync(dir).filter((f) => f.endsWith('.lua'));
  const out = {} as Record<N, RedisScript>;
  for (const name of names) {
    const file = files.find((f) => f.replace(/-\d+\.lua$/, '') === name);
    if (!file) throw new Error(`no Lua script ${name} in ${dir}`);
    out[name] = new RedisScript(path.join(dir, file));
  }
  return out;
}
