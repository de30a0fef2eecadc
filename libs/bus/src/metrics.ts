import { metrics, type Attributes, type Counter, type Histogram, type ObservableGauge } from '@opentelemetry/api';

/**
 * The bus's Prometheus metrics (names documented in docs/OBSERVABILITY.md). Instruments are created on
 * first use, so a process that registers its MeterProvider before the bus is used (the
 * `--import @conveyor/telemetry/register` hook does) gets real ones; elsewhere they are no-ops.
 */
export const BUS_METRICS = {
  published: 'conveyor_bus_messages_published',
  publishRetries: 'conveyor_bus_publish_retries',
  outageRetries: 'conveyor_bus_outage_retries',
  consumed: 'conveyor_bus_messages_consumed',
  handlerDuration: 'conveyor_bus_handler_duration_seconds',
  deadLetters: 'conveyor_bus_dead_letters',
  redeliveries: 'conveyor_bus_redeliveries',
  consumerPending: 'conveyor_consumer_pending_messages',
  consumerAckPending: 'conveyor_consumer_ack_pending_messages',
  consumerInFlight: 'conveyor_consumer_in_flight',
} as const;

/** Seconds; from a fast hop (ms) to a long agent run (minutes). */
export const DURATION_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

interface BusInstruments {
  published: Counter;
  publishRetries: Counter;
  outageRetries: Counter;
  consumed: Counter;
  handlerDuration: Histogram;
  deadLetters: Counter;
  redeliveries: Counter;
}

let instruments: BusInstruments | undefined;

export function busMetrics(): BusInstruments {
  if (instruments) return instruments;
  const meter = metrics.getMeter('@conveyor/bus');
  instruments = {
    published: meter.createCounter(BUS_METRICS.published, { description: 'Messages stored by JetStream after a publish (messages out), by stream and outcome' }),
    publishRetries: meter.createCounter(BUS_METRICS.publishRetries, { description: 'Publishes tried again because the broker did not acknowledge (restart, disconnect)' }),
    outageRetries: meter.createCounter(BUS_METRICS.outageRetries, { description: 'Handler runs retried in place because a dependency was briefly unavailable, by consumer' }),
    consumed: meter.createCounter(BUS_METRICS.consumed, { description: 'Messages taken from a durable consumer (messages in), by consumer and outcome' }),
    handlerDuration: meter.createHistogram(BUS_METRICS.handlerDuration, {
      description: 'Time from delivery to ack/nak/term of a consumed message',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS_SECONDS },
    }),
    deadLetters: meter.createCounter(BUS_METRICS.deadLetters, { description: 'Messages a consumer gave up on and published to the dead letters, by source and reason' }),
    redeliveries: meter.createCounter(BUS_METRICS.redeliveries, { description: 'Deliveries with a delivery count above 1, by consumer' }),
  };
  return instruments;
}

/** What a running consumer reports to the lag and in-flight gauges. */
export interface ObservedConsumer {
  readonly stream: string;
  readonly durable: string;
  readonly inFlight: number;
  /** num_pending and num_ack_pending from the server's consumer info. */
  lag(): Promise<{ pending: number; ackPending: number } | undefined>;
}

const observed = new Set<ObservedConsumer>();
let gauges: { pending: ObservableGauge; ackPending: ObservableGauge; inFlight: ObservableGauge } | undefined;

const LAG_TIMEOUT_MS = 2_000;

function withTimeout<T>(p: Promise<T>): Promise<T | undefined> {
  return Promise.race([p.catch(() => undefined), new Promise<undefined>((r) => setTimeout(() => r(undefined), LAG_TIMEOUT_MS).unref())]);
}

/**
 * Registers a consumer with the gauges; returns the function that removes it. Lag is read from the
 * server when the metrics are collected (a scrape), so every replica of a role reports the same
 * consumer-wide value: aggregate with max(), not sum().
 */
export function observeConsumer(c: ObservedConsumer): () => void {
  if (!gauges) {
    const meter = metrics.getMeter('@conveyor/bus');
    gauges = {
      pending: meter.createObservableGauge(BUS_METRICS.consumerPending, { description: 'Messages in the stream not yet delivered to the durable consumer (JetStream num_pending)' }),
      ackPending: meter.createObservableGauge(BUS_METRICS.consumerAckPending, { description: 'Messages delivered and not yet acked, across all replicas (JetStream num_ack_pending)' }),
      inFlight: meter.createObservableGauge(BUS_METRICS.consumerInFlight, { description: 'Handlers running in this process' }),
    };
    meter.addBatchObservableCallback(async (result) => {
      await Promise.all(
        [...observed].map(async (o) => {
          const attrs: Attributes = { stream: o.stream, consumer: o.durable };
          result.observe(gauges!.inFlight, o.inFlight, attrs);
          const lag = await withTimeout(o.lag());
          if (lag) {
            result.observe(gauges!.pending, lag.pending, attrs);
            result.observe(gauges!.ackPending, lag.ackPending, attrs);
          }
        }),
      );
    }, [gauges.pending, gauges.ackPending, gauges.inFlight]);
  }
  observed.add(c);
  return () => observed.delete(c);
}
