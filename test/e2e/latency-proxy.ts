/**
 * A TCP proxy that delays every chunk by a fixed time in each direction (order kept): the
 * network of two people far from the server, for browser tests. WebSocket frames and HTTP alike.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface LatencyProxy {
  port: number;
  close(): Promise<void>;
}

export async function latencyProxy(targetPort: number, oneWayMs: number): Promise<LatencyProxy> {
  const sockets = new Set<Socket>();
  const pipe = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => {
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk);
      }, oneWayMs);
    });
    from.on('end', () => setTimeout(() => to.end(), oneWayMs));
    from.on('error', () => to.destroy());
    from.on('close', () => setTimeout(() => to.destroy(), oneWayMs + 1));
  };
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    client.on('close', () => sockets.delete(client));
    upstream.on('close', () => sockets.delete(upstream));
    pipe(client, upstream);
    pipe(upstream, client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
