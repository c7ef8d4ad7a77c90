import { RunContext, Step, Workflow } from '../../src';
import { createApp, waitFor } from '../support';
const woke = new Map<string, number>();
@Workflow('s_sleep')
class Sl { @Step({ retry: { attempts: 1 } }) async go(ctx: RunContext<{ until: number }>) { await ctx.sleep(Math.max(0, ctx.input.until - Date.now())); if (!woke.has(ctx.runId)) woke.set(ctx.runId, Date.now()); return 1; } }
it('throughput', async () => {
  const app = await createApp({ workflows: [Sl], concurrency: 100, options: { worker: { pollInterval: '1s' } } });
  const { durable } = app;
  const core = (durable as any).core;
  const stats: Record<string, { n: number; ms: number; max: number }> = {};
  let measuring = false;
  const orig = core.db.query.bind(core.db);
  core.db.query = async (text: string, values: unknown[], name?: string) => {
    const t = Date.now();
    try { return await orig(text, values, name); } finally {
      if (measuring) { const k = name ?? text.trim().slice(0, 40).replace(/\s+/g, ' '); const s = (stats[k] ??= { n: 0, ms: 0, max: 0 }); s.n++; s.ms += Date.now() - t; s.max = Math.max(s.max, Date.now() - t); }
    }
  };
  const due = Date.now() + 4000;
  await durable.startMany('s_sleep', Array.from({ length: 1000 }, () => ({ input: { until: due } })));
  await new Promise((r) => setTimeout(r, due - Date.now() - 50));
  measuring = true;
  await waitFor(() => woke.size === 1000, { timeout: 10000, interval: 20 });
  measuring = false;
  const late = [...woke.values()].map((t) => t - due).sort((a, b) => a - b);
  console.log('late p50', late[500], 'p90', late[900], 'max', late[999], JSON.stringify(stats, null, 1));
}, 60000);
