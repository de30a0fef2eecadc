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

/** `count` free ports, no two the same (the OS may hand a closed one out again). */
export async function distinctFreePorts(count: number): Promise<number[]> {
  const taken = new Set<number>();
  while (taken.size < count) taken.add(await freePort());
  return [...taken];
}
