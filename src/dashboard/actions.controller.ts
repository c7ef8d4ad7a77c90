import { Body, Controller, HttpStatus, Param, Post, Req, Res, UseGuards } from '@nestjs/common';
import { DurableConnection } from '../core/durable.connection';
import { DurableValidationError, RunNotFoundError } from '../errors';
import { flowNotFound } from '../errors/flow-not-found';
import { dropReason } from '../domain/drop-reason';
import { assertValid, nameProblem } from '../domain/validation';
import { FlowsEngine } from '../flows/flows.engine';
import { QueueControls } from '../runs/queue-controls';
import { RunAdmin } from '../runs/run-admin';
import { RunEvents } from '../runs/run-events';
import { Scheduler } from '../schedules/scheduler';
import { ActivityStore } from '../store/activity.store';
import { EventsStore } from '../store/events.store';
import { inCallerTx, type CallerTx } from '../store/caller-tx';
import { DashboardStore } from '../store/dashboard.store';
import { DashboardContext, runIdParam, type Answer, type HtmlResponse } from './dashboard.context';
import { DashboardGuard } from './dashboard.guard';
import { DashboardReads } from './dashboard-reads';
import type { DashboardAction } from './dashboard.options';
import type { PageContext } from './layout';
import { errorPage } from './pages/lists.page';

/** A request as the actions read it (Express or Fastify). */
export interface ActionRequest {
  headers: Record<string, string | string[] | undefined>;
}

/** The run actions by their URL segment. */
const RUN_ACTIONS: Record<string, DashboardAction> = {
  cancel: 'cancel',
  retry: 'retry',
  rerun: 'rerun',
  'release-key': 'releaseKey',
  'provide-input': 'provideInput',
  'send-event': 'sendEvent',
};

/** What an action reads before its transaction when it reads nothing. */
const nothing = async (): Promise<undefined> => undefined;

const header = (req: ActionRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * Why a POST from another site (or one that does not say where it comes from) is refused: a
 * browser sends `Sec-Fetch-Site` or `Origin` with every form it posts.
 */
export function crossOrigin(req: ActionRequest): string | undefined {
  const site = header(req, 'sec-fetch-site');
  if (site !== undefined) return site === 'same-origin' ? undefined : `a request from another site (${site}) is refused`;
  const origin = header(req, 'origin');
  if (origin === undefined) return 'a request that does not say where it comes from (no Origin) is refused';
  try {
    return new URL(origin).host === header(req, 'host') ? undefined : 'a request from another origin is refused';
  } catch {
    return 'a request from another origin is refused';
  }
}

/** A JSON text from a form field, or a `DurableValidationError` naming the field. */
function parseJson(text: unknown, field: string): unknown {
  if (text === undefined || text === '') return null;
  try {
    return JSON.parse(String(text));
  } catch {
    throw new DurableValidationError(`${field} is not JSON: ${String(text).slice(0, 80)}`);
  }
}

/**
 * A form field that names something (an event, an input), or a `DurableValidationError`: a field
 * sent twice, or as `name[a]=…`, arrives as an array or an object, never as a name.
 */
function formName(body: Record<string, unknown>, field: string, action: string): string {
  const value = body[field];
  assertValid(action, [nameProblem(value, field)]);
  return value as string;
}

/**
 * A checkbox of the form: true when it was ticked (sent with its value `true`), false when absent,
 * else a `DurableValidationError` naming the field.
 */
function formCheckbox(body: Record<string, unknown>, field: string): boolean {
  const value = body[field];
  if (value === undefined) return false;
  if (value === 'true') return true;
  throw new DurableValidationError(`${field} must be absent or "true" (a checkbox), got ${JSON.stringify(value)?.slice(0, 80)}`);
}

/**
 * The dashboard's actions (POST): refused with 403 while read-only, from another origin, or when
 * `authorize` says no; each one is done and recorded in the activity log (`dashboard_action`) with
 * its actor in one transaction (both or neither), then the browser is sent back to the page of the run.
 */
@Controller()
@UseGuards(DashboardGuard)
export class ActionsController {
  constructor(
    private readonly context: DashboardContext,
    private readonly reads: DashboardReads,
    private readonly admin: RunAdmin,
    private readonly events: RunEvents,
    private readonly scheduler: Scheduler,
    private readonly activity: ActivityStore,
    private readonly connection: DurableConnection,
    private readonly controls: QueueControls,
    private readonly flows: FlowsEngine,
    /** Reads a run in the action's transaction, without its children. */
    private readonly store: DashboardStore,
    /** Reads, in the action's transaction, whether a run that dropped what it was sent is past its workflow deadline. */
    private readonly eventsStore: EventsStore,
  ) {}

  @Post('runs/:id/:action')
  async runAction(
    @Req() req: ActionRequest,
    @Res() res: HtmlResponse,
    @Param('id') given: string,
    @Param('action') slug: string,
    @Body() body: Record<string, unknown> = {},
  ) {
    const action = Object.prototype.hasOwnProperty.call(RUN_ACTIONS, slug) ? RUN_ACTIONS[slug] : undefined;
    if (!action) return this.refuse(res, HttpStatus.NOT_FOUND, `there is no action "${slug}"`);
    // the run's workflow and key, for the record (not its children), read on the pages' pool
    // before the transaction: no connection of the module's is held while that pool is busy
    const read = async () => {
      const id = runIdParam(given);
      const run = (await this.reads.readers.pages.run(id))?.run;
      if (!run) throw new RunNotFoundError(id);
      return { id, run };
    };
    return this.act(req, res, action, read, async (actor, ctx, tx, { id, run }) => {
      const details: Record<string, unknown> = { action };
      let shownId = id;
      if (action === 'cancel') await this.admin.cancel(id, { reason: 'cancelled from the dashboard' }, tx);
      else if (action === 'retry') await this.admin.retry(id, tx);
      else if (action === 'rerun') shownId = details.newRunId = (await this.admin.rerun(id, undefined, tx)).runId;
      else if (action === 'releaseKey') await this.admin.releaseKey(id, { by: actor ?? 'dashboard' }, tx);
      else if (action === 'provideInput') {
        const name = formName(body, 'name', action);
        const value = parseJson(body.value, 'value');
        details.outcome = await this.events.provideInput(id, name, value, tx);
        details.name = name;
      } else {
        const name = formName(body, 'name', action);
        const payload = parseJson(body.payload, 'payload');
        const buffer = formCheckbox(body, 'buffer');
        details.outcome = await this.events.send(id, name, payload, { buffer }, tx);
        details.name = name;
        details.buffer = buffer;
      }
      await this.record(tx, actor, id, run.workflow, run.key, details);
      if (details.outcome === 'dropped') return this.dropped(ctx, tx, id, action === 'provideInput' ? 'input' : 'event', details);
      return `${ctx.base}/runs/${shownId}`;
    });
  }

  @Post('schedules/:name/trigger')
  async trigger(@Req() req: ActionRequest, @Res() res: HtmlResponse, @Param('name') name: string) {
    return this.act(req, res, 'triggerSchedule', nothing, async (actor, ctx, tx) => {
      const started = await this.scheduler.trigger(name, tx);
      // the run it started (or the key's holder it went to) has the schedule's workflow and key
      await this.recordRun(tx, actor, started.runId, { action: 'triggerSchedule', schedule: name, outcome: started.outcome });
      return `${ctx.base}/runs/${started.runId}`;
    });
  }

  /** Runs a flow's node `from` and everything downstream of it again, then shows the flow again. */
  @Post('flows/:id/rerun')
  async rerunFlow(@Req() req: ActionRequest, @Res() res: HtmlResponse, @Param('id') id: string, @Body() body: Record<string, unknown> = {}) {
    return this.act(req, res, 'rerunFlow', nothing, async (actor, ctx, tx) => {
      const from = formName(body, 'from', 'rerunFlow');
      const { runIds } = await this.flows.rerun(id, { from }, tx).catch((err: unknown) => {
        throw flowNotFound(id, err);
      });
      await this.recordRun(tx, actor, runIds[from], { action: 'rerunFlow', flowId: id, from, runIds });
      return `${ctx.base}/flows/${encodeURIComponent(id)}`;
    });
  }

  /** Pauses or resumes a workflow on every node, then shows its page again. */
  @Post('workflows/:name/:action')
  async workflowAction(@Req() req: ActionRequest, @Res() res: HtmlResponse, @Param('name') name: string, @Param('action') action: string) {
    if (action !== 'pause' && action !== 'resume') return this.refuse(res, HttpStatus.NOT_FOUND, `there is no action "${action}"`);
    return this.act(req, res, action, nothing, async (actor, ctx, tx) => {
      await (action === 'pause' ? this.controls.pause(name, tx) : this.controls.resume(name, tx));
      await this.record(tx, actor, null, name, null, { action });
      return `${ctx.base}/workflows/${encodeURIComponent(name)}`;
    });
  }

  /**
   * Does `action` when this request may (else a 403 page): `work` does it and records it in `tx`,
   * one transaction of the module's that commits both or neither (so an action is never done
   * without its record), given who acts (asked before anything changes) and what `read` read
   * before the transaction began, and answers the URL the browser is sent to (a 303), or the page
   * to answer once both are committed; a failure, the commit's too, answers its page with nothing done.
   */
  private async act<T>(
    req: ActionRequest,
    res: HtmlResponse,
    action: DashboardAction,
    read: () => Promise<T>,
    work: (actor: string | null, ctx: PageContext, tx: CallerTx, read: T) => Promise<string | Answer>,
  ): Promise<void> {
    const refused = await this.refusal(req, action);
    if (refused) return this.refuse(res, HttpStatus.FORBIDDEN, refused);
    const actor = await this.actorOf(req);
    let target = '';
    const answer = await this.context.render(async (ctx) => {
      const got = await read();
      const done = await inCallerTx(this.connection.db, (tx) => work(actor, ctx, tx, got));
      if (typeof done !== 'string') return done;
      target = done;
      return '';
    });
    if (target) return this.context.redirect(res, target);
    this.context.send(res, answer);
  }

  /** Why `action` is refused for this request, or undefined. */
  private async refusal(req: ActionRequest, action: DashboardAction): Promise<string | undefined> {
    if (!this.context.writable) return 'the dashboard is read-only';
    const cross = crossOrigin(req);
    if (cross) return cross;
    const { authorize } = this.context.options;
    if (authorize && !(await authorize(action, req))) return `you may not ${action}`;
    return undefined;
  }

  private refuse(res: HtmlResponse, status: number, message: string): void {
    this.context.send(res, { status, html: errorPage(this.context.page(), status === HttpStatus.FORBIDDEN ? 'Forbidden' : 'Not found', message) });
  }

  /**
   * The page (409) for the input or event that run `runId` dropped (its record's `details`: its
   * `name`, and `buffer` for an event), as `tx` sees the run — `tx` holds the run's lock since the
   * send: it had finished, its workflow deadline had passed, or it was not waiting for the event
   * sent without `buffer`. Its record is committed with it, as `dropped`.
   */
  private async dropped(ctx: PageContext, tx: CallerTx, runId: string, what: 'input' | 'event', details: Record<string, unknown>): Promise<Answer> {
    const name = details.name as string;
    const run = await this.eventsStore.lockRun(tx.q, runId);
    if (!run) throw new RunNotFoundError(runId);
    const unbufferedEvent = what === 'event' && !details.buffer ? name : undefined;
    const why = dropReason({ status: run.status, pastDeadline: run.past_deadline, unbufferedEvent });
    return { status: HttpStatus.CONFLICT, html: errorPage(ctx, 'Cannot do that', `${what} "${name}" dropped: run ${runId} ${why}`) };
  }

  private async actorOf(req: ActionRequest): Promise<string | null> {
    return (await this.context.options.actor?.(req)) ?? null;
  }

  /**
   * Records an action on run `runId` (one `tx` may have made) with the run's workflow and key, read
   * in `tx`: the row alone, not its children (a key's holder may have thousands).
   */
  private async recordRun(tx: CallerTx, actor: string | null, runId: string, details: Record<string, unknown>): Promise<void> {
    const run = await this.store.run(tx.q, runId, 0, 0);
    await this.record(tx, actor, runId, run?.workflow ?? null, run?.key ?? null, details);
  }

  private async record(
    tx: CallerTx,
    actor: string | null,
    runId: string | null,
    workflow: string | null,
    key: string | null,
    details: Record<string, unknown>,
  ): Promise<void> {
    await this.activity.record(tx.q, 'dashboard_action', runId, workflow, key, { ...details, actor });
  }
}
