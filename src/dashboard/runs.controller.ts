import { Controller, Get, Param, Query, Res, UseGuards } from '@nestjs/common';
import { RunNotFoundError } from '../errors';
import { DashboardContext, runIdParam, type HtmlResponse } from './dashboard.context';
import { DashboardGuard } from './dashboard.guard';
import { DashboardReads } from './dashboard-reads';
import { CHILDREN_COUNTED, CHILDREN_SHOWN, runPage } from './pages/run.page';
import { runsPage } from './pages/runs.page';
import { parseRunsSearch, SearchError } from './search';

/** Runs shown per page. */
export const PAGE_SIZE = 50;

/** The runs list with its search, and the run page. */
@Controller()
@UseGuards(DashboardGuard)
export class RunsController {
  constructor(
    private readonly context: DashboardContext,
    private readonly reads: DashboardReads,
  ) {}

  /** `/runs?q=&before=&after=`: a bare run id (or `id:`) opens the run; an empty cursor is no cursor. */
  @Get('runs')
  async runs(@Res() res: HtmlResponse, @Query('q') q = '', @Query('before') before?: string, @Query('after') after?: string) {
    const search = String(q);
    let opened: string | undefined;
    const answer = await this.context.render(async (ctx) => {
      let filter;
      try {
        filter = parseRunsSearch(search);
      } catch (err) {
        if (!(err instanceof SearchError)) throw err;
        return { status: 400, html: runsPage(ctx, { q: search, runs: [], limit: PAGE_SIZE, error: err.message }) };
      }
      const { runs, pages } = this.reads.readers;
      if (filter.id) {
        if (!(await pages.run(filter.id))) throw new RunNotFoundError(filter.id);
        opened = `${ctx.base}/runs/${filter.id}`;
        return '';
      }
      // an empty cursor (a form that sends its field blank) is none, as on the keys and activity pages
      const cursors = { before: before || undefined, after: after || undefined };
      const page = await runs.list({ ...filter, ...cursors, limit: PAGE_SIZE });
      return runsPage(ctx, { q: search, runs: page, limit: PAGE_SIZE, ...cursors });
    });
    if (opened) return this.context.redirect(res, opened);
    this.context.send(res, answer);
  }

  /** `/runs/:id`: the run page; an id that is not a run id answers 400. */
  @Get('runs/:id')
  async run(@Res() res: HtmlResponse, @Param('id') given: string) {
    const answer = await this.context.render(async (ctx) => {
      const id = runIdParam(given);
      const { runs, keys, pages } = this.reads.readers;
      const view = await pages.run(id, CHILDREN_SHOWN, CHILDREN_COUNTED);
      if (!view) throw new RunNotFoundError(id);
      const { run, childCount, moreChildren } = view;
      const keyed = run.key !== null;
      const [history, keyRuns, readds, keyEvents, startNow] = await Promise.all([
        runs.historyOf(id, run),
        keyed ? runs.list({ workflow: run.workflow, key: run.key!, limit: PAGE_SIZE }) : [],
        keyed ? keys.listActivity({ runId: id, kinds: ['key_duplicate'], limit: PAGE_SIZE }) : [],
        keyed ? keys.listActivity({ workflow: run.workflow, key: run.key!, kinds: ['key_handed_off', 'key_released', 'key_retaken'], limit: PAGE_SIZE }) : [],
        // what a start with the key would do now (not when this node does not know the workflow)
        keyed ? keys.explainStart(run.workflow, null, { key: run.key! }).catch(() => undefined) : undefined,
      ]);
      return runPage(ctx, { run, childCount, moreChildren, history, keyRuns, readds, keyEvents, startNow });
    });
    this.context.send(res, answer);
  }
}
