import net from 'node:net';

/** A port the OS just handed out; racy in theory, fine for tests on one machine. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * `count` free ports, no two the same (the OS may hand a closed one out again). With `pairedOffset`,
 * each port's `port + pairedOffset` is free too (a Redis Cluster node's bus listens there).
 */
export async function distinctFreePorts(count: number, options: { pairedOffset?: number } = {}): Promise<number[]> {
  const offset = options.pairedOffset;
  const taken = new Set<number>();
  for (let tries = 0; taken.size < count; tries++) {
    if (tries > 1_000) throw new Error(`no ${count} free ports${offset ? ` with port + ${offset} free` : ''} after 1000 tries`);
    const p = await freePort();
    if (offset === undefined) taken.add(p);
    else if (p + offset <= 65_535 && !taken.has(p + offset) && ![...taken].some((t) => t + offset === p) && (await canListen(p + offset))) taken.add(p);
  }
  return [...taken];
}
