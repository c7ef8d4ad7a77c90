/**
 * The loop of a flow's dependency resolution, as the body of a plpgsql function with parameters
 * `fid`, `names`, `outcomes` and an integer `woke`: resolves every open edge leaving the named
 * nodes — decrements (exact under concurrency: the dependant's row lock serialises its parents) or,
 * per the ignore options, cancels dependants, iterating level by level (no trigger recursion) — and
 * notifies the workers on `channel` when a node became pending. With `reporting`, the id and
 * workflow of each node it cancels are appended to `cancelled_ids` and `cancelled_workflows`
 * (declared by the function).
 */
function resolveLoop(s: string, channel: string, reporting: boolean): string {
  const returning = reporting ? 'r.id, r.name, r.workflow, x.bad' : 'r.id, r.name, x.bad';
  const collect = reporting
    ? `SELECT array_agg(name), coalesce(array_agg(id), '{}'), coalesce(array_agg(workflow), '{}') INTO next_names, c_ids, c_workflows FROM c;
          cancelled_ids := cancelled_ids || c_ids;
          cancelled_workflows := cancelled_workflows || c_workflows;`
    : 'SELECT array_agg(name) INTO next_names FROM c;';
  return `
        LOOP
          EXIT WHEN names IS NULL OR cardinality(names) = 0;
          -- resolve every open edge leaving these nodes, grouped by dependant
          WITH e AS (
            UPDATE ${s}.flow_deps d SET resolved = true, missing = false
            FROM unnest(names, outcomes) AS x(n, o)
            WHERE d.flow_id = fid AND d.dep_name = x.n AND NOT d.resolved
            RETURNING d.run_id, x.o,
              (x.o = 'completed' OR (x.o = 'cancelled' AND d.ignore_cancelled)
                OR (x.o = 'failed' AND d.ignore_failed) OR (x.o = 'deleted' AND d.ignore_deleted)) AS ok
          ), g AS (
            SELECT run_id, (count(*) FILTER (WHERE ok))::int AS oks, (array_agg(o) FILTER (WHERE NOT ok))[1] AS bad
            FROM e GROUP BY run_id
          )
          SELECT array_agg(g.run_id ORDER BY g.run_id), array_agg(g.oks ORDER BY g.run_id), array_agg(g.bad ORDER BY g.run_id),
              count(*) FILTER (WHERE g.bad IS NOT NULL), count(*) FILTER (WHERE g.bad IS NULL AND g.oks > 0)
            INTO ids, oks, bads, nbad, nok
          FROM g;
          EXIT WHEN ids IS NULL;
          -- dependants whose dep counts as completed: one dep fewer; the last one makes them pending
          IF nok > 0 THEN
          WITH w AS (
            UPDATE ${s}.runs r SET
              deps_left = r.deps_left - x.oks,
              status = CASE WHEN r.deps_left - x.oks <= 0 THEN 'pending' ELSE r.status END,
              run_at = CASE WHEN r.deps_left - x.oks <= 0 THEN now() ELSE r.run_at END
            FROM unnest(ids, oks, bads) AS x(id, oks, bad)
            WHERE r.id = x.id AND x.bad IS NULL AND x.oks > 0 AND r.status = 'waiting' AND r.deps_left > 0
            RETURNING r.status
          ) SELECT count(*) FILTER (WHERE status = 'pending') INTO n FROM w;
          woke := woke + n;
          END IF;
          EXIT WHEN nbad = 0;
          -- dependants with a dep that cancels them: cancelled now, hook due; their own dependants next
          PERFORM set_config('durable.flow_resolving', 'on', true);
          WITH c AS (
            UPDATE ${s}.runs r SET status = 'cancelled', finished_at = now(),
              cancel_reason = 'a dependency was ' || x.bad,
              error = jsonb_build_object('name', 'CancelledError', 'code', 'cancelled',
                'message', 'cancelled because a dependency was ' || x.bad, 'reason', x.bad)
            FROM unnest(ids, bads) AS x(id, bad)
            WHERE r.id = x.id AND x.bad IS NOT NULL AND r.status = 'waiting' AND r.deps_left > 0
            RETURNING ${returning}
          ), h AS (
            INSERT INTO ${s}.flow_hooks (run_id, reason) SELECT id, bad FROM c ON CONFLICT DO NOTHING
          )
          ${collect}
          PERFORM set_config('durable.flow_resolving', '', true);
          names := next_names;
          outcomes := CASE WHEN next_names IS NULL THEN NULL ELSE array_fill('cancelled'::text, ARRAY[cardinality(next_names)]) END;
        END LOOP;
        IF woke > 0 THEN PERFORM pg_notify('${channel}', ''); END IF;`;
}

/**
 * `durable_flow_resolve(fid, names, outcomes) RETURNS integer` as the flows migration made it: the
 * resolution loop itself, returning how many nodes woke.
 */
export function flowResolveFunction(s: string, channel: string): string {
  return `
      CREATE OR REPLACE FUNCTION ${s}.durable_flow_resolve(fid text, names text[], outcomes text[]) RETURNS integer
      LANGUAGE plpgsql AS $fn$
      DECLARE
        ids uuid[]; oks int[]; bads text[];
        nbad int; nok int;
        next_names text[];
        woke int := 0;
        n int;
      BEGIN${resolveLoop(s, channel, false)}
        RETURN woke;
      END
      $fn$`;
}

/**
 * `durable_flow_resolve_cascaded(fid, names, outcomes)`: the resolution loop, reporting what it did
 * as one row — `woke` (nodes made pending), and `cancelled_ids` / `cancelled_workflows` (each node it
 * cancelled because a dependency did not complete, its dependants' dependants included), so the
 * caller counts them from its own statement.
 */
export function flowResolveCascadedFunction(s: string, channel: string): string {
  return `
      CREATE OR REPLACE FUNCTION ${s}.durable_flow_resolve_cascaded(fid text, names text[], outcomes text[],
        OUT woke integer, OUT cancelled_ids uuid[], OUT cancelled_workflows text[])
      LANGUAGE plpgsql AS $fn$
      DECLARE
        ids uuid[]; oks int[]; bads text[];
        nbad int; nok int;
        next_names text[];
        c_ids uuid[]; c_workflows text[];
        n int;
      BEGIN
        woke := 0; cancelled_ids := '{}'; cancelled_workflows := '{}';${resolveLoop(s, channel, true)}
      END
      $fn$`;
}

/**
 * `durable_flow_resolve(fid, names, outcomes) RETURNS integer` as a wrapper of
 * `durable_flow_resolve_cascaded`: the same signature and result for the callers of the previous
 * version (its nodes during a rolling deploy), with one implementation of the loop. The flow
 * triggers call `durable_flow_resolve_cascaded` itself (the wrapper's call costs about 10–15 µs).
 */
export function flowResolveWrapper(s: string): string {
  return `
      CREATE OR REPLACE FUNCTION ${s}.durable_flow_resolve(fid text, names text[], outcomes text[]) RETURNS integer
      LANGUAGE plpgsql AS $fn$
      BEGIN
        RETURN (SELECT r.woke FROM ${s}.durable_flow_resolve_cascaded(fid, names, outcomes) r);
      END
      $fn$`;
}

/**
 * The trigger functions of the flow triggers, calling `resolve` (`durable_flow_resolve`, or
 * `durable_flow_resolve_cascaded`, whose report they leave unread): `durable_flow_on_finish()`
 * (`runs_flow_deps_trg`) resolves the flow nodes an UPDATE moved to a final status — one call per
 * UPDATE statement and flow, not per row: a batch of finished parents of one flow is resolved
 * together (a fan-in child is updated once per batch, not once per parent); and
 * `durable_flow_on_delete()` (`runs_flow_deleted_trg`): deleted runs (pruning, or by hand) take
 * their edges and hooks with them (no foreign keys: one statement per DELETE instead of a check per
 * inserted edge), and unfinished deleted nodes count as `deleted` for their dependants.
 */
export function flowTriggerFunctions(s: string, resolve: 'durable_flow_resolve' | 'durable_flow_resolve_cascaded'): [string, string] {
  const onFinish = `
      CREATE OR REPLACE FUNCTION ${s}.durable_flow_on_finish() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
      DECLARE
        f record;
      BEGIN
        -- rows cancelled by ${resolve} itself: its loop handles their dependants
        IF current_setting('durable.flow_resolving', true) = 'on' THEN RETURN NULL; END IF;
        IF NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.flow_id IS NOT NULL
                         AND n.status IN ('completed', 'failed', 'cancelled', 'compensated', 'compensation_failed')) THEN
          RETURN NULL;
        END IF;
        FOR f IN
          SELECT n.flow_id, array_agg(n.name) AS names,
            array_agg(CASE n.status WHEN 'completed' THEN 'completed' WHEN 'cancelled' THEN 'cancelled' ELSE 'failed' END) AS outcomes
          FROM new_rows n JOIN old_rows o ON o.id = n.id
          WHERE n.flow_id IS NOT NULL AND o.status IS DISTINCT FROM n.status
            AND n.status IN ('completed', 'failed', 'cancelled', 'compensated', 'compensation_failed')
          GROUP BY n.flow_id ORDER BY n.flow_id
        LOOP
          PERFORM ${s}.${resolve}(f.flow_id, f.names, f.outcomes);
        END LOOP;
        RETURN NULL;
      END
      $fn$`;
  const onDelete = `
      CREATE OR REPLACE FUNCTION ${s}.durable_flow_on_delete() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
      DECLARE
        f record;
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM old_rows o WHERE o.flow_id IS NOT NULL) THEN RETURN NULL; END IF;
        DELETE FROM ${s}.flow_deps d USING old_rows o WHERE o.flow_id IS NOT NULL AND d.run_id = o.id;
        DELETE FROM ${s}.flow_hooks h USING old_rows o WHERE o.flow_id IS NOT NULL AND h.run_id = o.id;
        FOR f IN
          SELECT o.flow_id, array_agg(o.name) AS names FROM old_rows o
          WHERE o.flow_id IS NOT NULL
            AND o.status NOT IN ('completed', 'failed', 'cancelled', 'compensated', 'compensation_failed')
          GROUP BY o.flow_id ORDER BY o.flow_id
        LOOP
          PERFORM ${s}.${resolve}(f.flow_id, f.names, array_fill('deleted'::text, ARRAY[cardinality(f.names)]));
        END LOOP;
        RETURN NULL;
      END
      $fn$`;
  return [onFinish, onDelete];
}
