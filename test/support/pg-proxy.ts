import * as net from 'net';

/**
 * A TCP proxy to Postgres that can refuse and drop connections (database down), go silent
 * (a network that drops everything without a word: connections stay open and nothing arrives),
 * and come back.
 */
export class PgProxy {
  private server?: net.Server;
  private readonly pairs = new Set<{ client: net.Socket; upstream?: net.Socket }>();
  private silent = false;
  /** Connections accepted while silent (never answered). */
  private unanswered = 0;
  port = 0;

  constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {}

  /** Listens (on the same port after a `down`) and forwards every connection. */
  async up(): Promise<void> {
    this.silent = false;
    this.server = net.createServer((client) => {
      const pair: { client: net.Socket; upstream?: net.Socket } = { client };
      this.pairs.add(pair);
      client.on('error', () => undefined);
      client.on('close', () => {
        this.pairs.delete(pair);
        pair.upstream?.destroy();
      });
      if (this.silent) {
        this.unanswered++; // accepted, never answered
        return;
      }
      const upstream = net.connect(this.targetPort, this.host);
      pair.upstream = upstream;
      upstream.on('error', () => undefined);
      client.pipe(upstream).pipe(client);
      upstream.on('close', () => {
        if (!this.silent) client.destroy();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /** Refuses new connections and drops every open one (the database is down). */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream?.destroy();
    }
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  /**
   * Goes silent: open connections stay open on the app's side but lead nowhere (their server
   * side is closed), and new ones are accepted and never answered — until {@link speak}.
   */
  silence(): void {
    this.silent = true;
    for (const { client, upstream } of this.pairs) {
      client.unpipe();
      upstream?.unpipe();
      upstream?.destroy();
    }
  }

  /** Connections accepted since the proxy went silent, and never answered. */
  silentSockets(): number {
    return this.unanswered;
  }

  /** New connections are forwarded again (the silenced ones stay dead). */
  speak(): void {
    this.silent = false;
  }

  /** A URL of the database that goes through the proxy (call after {@link up}). */
  url(databaseUrl: string): string {
    const via = new URL(databaseUrl);
    via.hostname = '127.0.0.1';
    via.port = String(this.port);
    return via.toString();
  }
}
