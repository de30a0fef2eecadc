import { randomUUID } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { topology } from '@conveyor/contracts';

/**
 * A plugin that misbehaves on purpose, spoken in the raw wire protocol (no SDK), as a plugin in
 * another language would: it registers for PersonNormalMessageReceived and then, per PLUGIN_MODE,
 * answers too late (`slow`), exits on its first call (`crash`) or answers garbage (`malformed`).
 * Each call it receives is printed as a JSON line with the W3C traceparent it carried.
 */
const env = process.env;
const mode = env.PLUGIN_MODE ?? 'slow';
const name = env.PLUGIN_NAME ?? `test/${mode}`;
const subjects = topology(env.CONVEYOR_SUBJECT_PREFIX ?? 'conveyor').subjects.plugins;
const nc = await connect({ servers: env.NATS_URL ?? 'nats://127.0.0.1:4222', name });
const registration = JSON.stringify({
  v: 1,
  name,
  instanceId: randomUUID(),
  events: ['PersonNormalMessageReceived'],
  priority: Number(env.PLUGIN_PRIORITY ?? 100),
  timeoutMs: Number(env.PLUGIN_TIMEOUT_MS ?? 500),
  ttlMs: 30_000,
});
const announce = () => nc.publish(subjects.heartbeat, registration);
nc.subscribe(subjects.discover, { callback: () => announce() });
let calls = 0;
nc.subscribe(subjects.call(name), {
  queue: name,
  callback: (_err, msg) => {
    console.log(JSON.stringify({ call: name, traceparent: msg.headers?.get('traceparent') ?? null }));
    calls++;
    if (mode === 'crash') process.exit(3);
    if (mode === 'hold-first') {
      if (calls > 1) msg.respond(JSON.stringify({ v: 1 }));
      return;
    }
    if (mode === 'malformed') msg.respond('{"v":2,"prevent_default":"yes"}');
    // `slow`: answers well after the registered timeout; the host must not wait for it.
    else setTimeout(() => msg.respond(JSON.stringify({ v: 1, prevent_default: true })), 10_000);
  },
});
await nc.flush();
announce();
setInterval(announce, 2_000);
console.log(JSON.stringify({ msg: 'plugin running', name, mode }));
