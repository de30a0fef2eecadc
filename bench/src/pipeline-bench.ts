// bench/pipeline: (1) the in-process cost of the stages before MessageProcessor for one message (group
// rules, ACL, pre filter with ignore rules and ban words, PreProcessor with 20 history messages,
// truncator, rate limit), with in-memory ports, so the number is the engine and stage code alone;
// (2) the orchestrator's messages/s through the running system (four service processes, real NATS,
// Redis, Postgres) with the fake model answering at once.
//
// Usage: npm run bench:pipeline -- [preStageMessages=20000] [systemMessages=1000] [concurrency=32]
import type { LlmMessage } from '@conveyor/contracts';
import { instantiate, loadPipeline, DEFAULT_PIPELINE_STAGES, runStages } from '@conveyor/pipeline';
import { recordingDeps, testQuery } from '@conveyor/pipeline/testing';
import { startTestSystem } from '@conveyor/test';
import { percentile } from './stats.js';

const preMessages = Number(process.argv[2] ?? 20_000);
const systemMessages = Number(process.argv[3] ?? 1000);
const concurrency = Number(process.argv[4] ?? 32);

async function preStageCost(): Promise<{ p50: number; p99: number }> {
  const config = {
    trigger: { 'group-respond-rules': { regexp: ['^bot\\b'] }, 'ignore-rules': { prefix: ['#'], regexp: ['^ignore'] }, 'access-control': { blacklist: ['person_x', 'group_y'] } },
  };
  const loaded = loadPipeline('bench', DEFAULT_PIPELINE_STAGES, config);
  if (!loaded.ok) throw new Error('bench pipeline invalid');
  const def = loaded.pipeline;
  const history: LlmMessage[] = Array.from({ length: 20 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `history message ${i} `.repeat(10) }));
  const { deps } = recordingDeps({
    history: { load: async () => ({ conversationId: 'c', history }) },
    models: { abilities: async () => ['func_call'] },
    rateLimiter: { require: async () => ({ allowed: true }) },
    banWords: { mask: '*', maskWord: '', words: ['forbidden\\w*', '坏蛋', 'bad(word|thing)'] },
  });
  const stages = instantiate(def, deps, 0, def.boundary);
  const samples: number[] = [];
  for (let i = 0; i < preMessages + 2000; i++) {
    const q = testQuery({ group: true, chain: [{ type: 'At', target: 'http_bot', display: '' }, { type: 'Plain', text: ` please summarise message ${i} for me` }], config });
    const t = process.hrtime.bigint();
    await runStages(stages, 0, q, deps);
    const us = Number(process.hrtime.bigint() - t) / 1000;
    if (i >= 2000) samples.push(us); // the first 2000 warm the JIT
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

async function systemThroughput(): Promise<{ perSecond: number; seconds: number }> {
  const sys = await startTestSystem({ serviceEnv: { LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: '' } });
  try {
    sys.llm.setDefault({ text: 'ok' });
    let next = 0;
    const pushAll = async (to: number) => {
      await Promise.all(Array.from({ length: concurrency }, async () => {
        while (next < to) {
          const i = next++;
          const res = await sys.post({ session_id: `pb-${i % 500}`, message: [{ type: 'Plain', text: `message ${i}` }] });
          if (res.status !== 202) throw new Error(`ingress answered ${res.status}`);
        }
      }));
    };
    const finals = () => sys.callbacks.received.filter((c) => c.json?.is_final === true).length;
    const warm = Math.min(100, Math.ceil(systemMessages / 10));
    await pushAll(warm);
    await sys.callbacks.waitFor(() => finals() >= warm, 120_000);
    const start = performance.now();
    await pushAll(warm + systemMessages);
    await sys.callbacks.waitFor(() => finals() >= warm + systemMessages, 600_000);
    const seconds = (performance.now() - start) / 1000;
    return { perSecond: systemMessages / seconds, seconds };
  } finally {
    await sys.stop();
  }
}

const pre = await preStageCost();
console.log(`pre-stages (6 stages, in process): p50 ${pre.p50.toFixed(1)} µs, p99 ${pre.p99.toFixed(1)} µs per message over ${preMessages} messages`);
const sys = await systemThroughput();
console.log(`orchestrator through the system, model answering at once: ${sys.perSecond.toFixed(0)} messages/s (${systemMessages} messages in ${sys.seconds.toFixed(1)} s, ${concurrency} concurrent posts, 500 sessions)`);
process.exit(0);
