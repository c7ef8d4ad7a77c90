import * as net from 'net';

/** Startup parameters PgBouncer accepts by default (any other refuses the connection unless ignored). */
const POOLER_STARTUP_PARAMETERS = new Set(['user', 'database', 'client_encoding', 'datestyle', 'timezone', 'standard_conforming_strings', 'application_name']);

/** Protocol codes of the untyped first messages. */
const SSL_REQUEST = 80877103;
const GSS_REQUEST = 80877104;

/**
 * A TCP proxy to Postgres that reads what clients send and records what a pooler in transaction
 * mode (PgBouncer `pool_mode = transaction`) would break on: startup parameters it does not accept
 * (session settings such as `statement_timeout`), named prepared statements (a later use may reach a
 * server connection that never prepared them), `LISTEN`, and session-level settings (`SET` without
 * `LOCAL`, `set_config(…, false)`), which would leak to other clients. Everything is forwarded.
 */
export class PoolerProxy {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  /** What a transaction pooler would break on, one line each. */
  readonly violations: string[] = [];
  /** Every statement text seen (simple and extended protocol). */
  readonly statements: string[] = [];
  port = 0;

  constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {}

  /** The connection string `url` with its host and port pointing at this proxy. */
  url(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  async up(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.host);
      this.sockets.add(client).add(upstream);
      for (const s of [client, upstream]) {
        s.on('error', () => undefined);
        s.on('close', () => {
          this.sockets.delete(s);
          client.destroy();
          upstream.destroy();
        });
      }
      upstream.pipe(client);
      let buffered = Buffer.alloc(0);
      let started = false;
      client.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        for (;;) {
          if (!started) {
            if (buffered.length < 8) break;
            const len = buffered.readInt32BE(0);
            if (buffered.length < len) break;
            const code = buffered.readInt32BE(4);
            if (code === SSL_REQUEST || code === GSS_REQUEST) {
              client.write('N'); // no encryption: the client goes on in plain text
              buffered = buffered.subarray(len);
              continue;
            }
            this.startup(buffered.subarray(8, len));
            upstream.write(buffered.subarray(0, len));
            buffered = buffered.subarray(len);
            started = true;
            continue;
          }
          if (buffered.length < 5) break;
          const len = buffered.readInt32BE(1) + 1;
          if (buffered.length < len) break;
          this.message(String.fromCharCode(buffered[0]), buffered.subarray(5, len));
          upstream.write(buffered.subarray(0, len));
          buffered = buffered.subarray(len);
        }
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  async down(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }

  private startup(body: Buffer): void {
    const parts = body.toString('utf8').split('\0');
    for (let i = 0; i + 1 < parts.length && parts[i] !== ''; i += 2) {
      if (!POOLER_STARTUP_PARAMETERS.has(parts[i])) this.violations.push(`startup parameter ${parts[i]}=${parts[i + 1]}`);
    }
  }

  private message(type: string, body: Buffer): void {
    if (type === 'Q') this.statement(body.toString('utf8', 0, body.indexOf(0)));
    else if (type === 'P') {
      const nameEnd = body.indexOf(0);
      const name = body.toString('utf8', 0, nameEnd);
      const text = body.toString('utf8', nameEnd + 1, body.indexOf(0, nameEnd + 1));
      if (name !== '') this.violations.push(`named prepared statement ${name}`);
      this.statement(text);
    }
  }

  private statement(text: string): void {
    this.statements.push(text);
    if (/^\s*LISTEN\b/i.test(text)) this.violations.push(`LISTEN: ${text}`);
    if (/^\s*(SET|RESET)\s+(?!LOCAL\b|TRANSACTION\b)/i.test(text)) this.violations.push(`session setting: ${text}`);
    if (/set_config\([^)]*,\s*false\s*\)/i.test(text)) this.violations.push(`session setting: ${text.slice(0, 120)}`);
  }
}
