import { Controller, Get, Param, Query, Res, UseGuards } from '@nestjs/common';
import { Scheduler } from '../schedules/scheduler';
import { DashboardContext, type HtmlResponse } from './dashboard.context';
import { DashboardGuard } from './dashboard.guard';
import { DashboardReads } from './dashboard-reads';
import { FLOW_NODES_SHOWN, flowPage } from './pages/flow.page';
import { keysPage } from './pages/keys.page';
import { activityPage, nodesPage, schedulesPage } from './pages/lists.page';
import { overviewPage } from './pages/overview.page';
import { workflowPage, workflowsPage } from './pages/workflows.page';
import { PAGE_SIZE } from './runs.controller';
import { UnknownWorkflowError } from '../errors';
import { flowNotFound } from '../errors/flow-not-found';
import { assertValid, nameProblem } from '../domain/validation';

/** Figures of the overview count at most this many runs each (a page never counts the history). */
const OVERVIEW_CAP = 1000;

/** Schedules listed on a workflow's page (the Schedules page of the workflow lists them all, paged). */
const WORKFLOW_SCHEDULES = 20;

/** The overview, workflows, keys, flows, schedules, activity and nodes pages. */
@Controller()
@UseGuards(DashboardGuard)
export class PagesController {
  constructor(
    private readonly context: DashboardContext,
    private readonly reads: DashboardReads,
    private readonly scheduler: Scheduler,
  ) {}

  @Get()
  async overview(@Res() res: HtmlResponse) {
    this.context.send(
      res,
      await this.context.render(async (ctx) => {
        const { cluster, backlog } = this.reads.readers;
        const [workflows, nodes, lag] = await Promise.all([cluster.workflows(OVERVIEW_CAP), cluster.nodeList(), backlog()]);
        return overviewPage(ctx, { workflows, nodes, backlog: lag });
      }),
    );
  }

  @Get('workflows')
  async workflows(@Res() res: HtmlResponse) {
    this.context.send(res, await this.context.render(async (ctx) => workflowsPage(ctx, await this.reads.readers.cluster.workflows(OVERVIEW_CAP))));
  }

  @Get('workflows/:name')
  async workflow(@Res() res: HtmlResponse, @Param('name') name: string) {
    this.context.send(
      res,
      await this.context.render(async (ctx) => {
        const { cluster, runs, keys } = this.reads.readers;
        const workflow = (await cluster.workflows(OVERVIEW_CAP)).find((w) => w.name === name);
        if (!workflow) throw new UnknownWorkflowError(name);
        const [recent, stats, keyList, schedules] = await Promise.all([
          runs.list({ workflow: name, limit: 20 }),
          keys.keyStats({ workflow: name }),
          keys.listKeys({ workflow: name, limit: 20 }),
          this.scheduler.list({ workflow: name, limit: WORKFLOW_SCHEDULES }),
        ]);
        return workflowPage(ctx, { workflow, recent, stats, keys: keyList, schedules, schedulesLimit: WORKFLOW_SCHEDULES });
      }),
    );
  }

  @Get('keys')
  async keys(@Res() res: HtmlResponse, @Query('workflow') workflow?: string, @Query('q') q?: string, @Query('cursor') cursor?: string) {
    this.context.send(
      res,
      await this.context.render(async (ctx) => {
        const { keys, cluster } = this.reads.readers;
        const wf = workflow || undefined;
        const page = await keys.keysPage({ workflow: wf, search: q || undefined, cursor: cursor || undefined, limit: PAGE_SIZE });
        const names = (await cluster.workflows(1)).map((w) => w.name);
        return keysPage(ctx, { workflow: wf, q, keys: page.keys, next: page.next, cursor: cursor || undefined, workflows: names });
      }),
    );
  }

  @Get('flows/:id')
  async flow(@Res() res: HtmlResponse, @Param('id') id: string) {
    this.context.send(
      res,
      await this.context.render(async (ctx) => {
        const view = await this.reads.readers.pages.flow(id, FLOW_NODES_SHOWN, ctx.actions).catch((err: unknown) => {
          throw flowNotFound(id, err);
        });
        return flowPage(ctx, view);
      }),
    );
  }

  /** `/schedules?workflow=&after=`: 50 schedules a page by name (of one workflow, when given), from the one after `after`. */
  @Get('schedules')
  async schedules(@Res() res: HtmlResponse, @Query('workflow') workflow?: string, @Query('after') after?: string) {
    this.context.send(
      res,
      await this.context.render(async (ctx) => {
        const wf = workflow === '' ? undefined : workflow;
        const from = after === '' ? undefined : after;
        assertValid('schedules', [wf === undefined ? undefined : nameProblem(wf, 'workflow'), from === undefined ? undefined : nameProblem(from, 'after')]);
        const schedules = await this.scheduler.list({ workflow: wf, after: from, limit: PAGE_SIZE });
        return schedulesPage(ctx, { schedules, workflow: wf, after: from, limit: PAGE_SIZE });
      }),
    );
  }

  @Get('activity')
  async activity(@Res() res: HtmlResponse, @Query('kind') kind?: string, @Query('cursor') cursor?: string) {
    this.context.send(
      res,
      await this.context.render(async (ctx) => {
        const events = await this.reads.readers.keys.listActivity({ kinds: kind ? [kind] : undefined, cursor: cursor || undefined, limit: PAGE_SIZE });
        return activityPage(ctx, { events, kind, limit: PAGE_SIZE });
      }),
    );
  }

  @Get('nodes')
  async nodes(@Res() res: HtmlResponse) {
    this.context.send(res, await this.context.render(async (ctx) => nodesPage(ctx, await this.reads.readers.cluster.nodeList())));
  }
}
