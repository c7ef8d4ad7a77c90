import { Controller, Get, Header, NotFoundException, Param, Post } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DurableService, RunNotFoundError } from 'nestjs-durable';
import { DataSource } from 'typeorm';
import { Article } from '../articles/article.entity';
import { EtlArticleStats, EtlReport, EtlSnapshot } from './etl.workflows';

/**
 * The nightly ETL as a DAG flow: `snapshot` → one `article_<id>` node per article (fan-out, run
 * in parallel) → `report` (fan-in, reads every article node's recorded result).
 */
@Controller('flows')
export class EtlController {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly durable: DurableService,
  ) {}

  /** `POST /flows/nightly-etl`: builds and starts the flow over the current articles. */
  @Post('nightly-etl')
  async startNightlyEtl() {
    const articles = await this.dataSource.getRepository(Article).find({ select: { id: true }, order: { id: 'ASC' } });
    const ids = articles.map((a) => a.id);
    let flow = this.durable.flow({ name: 'nightly-etl' }).add('snapshot', EtlSnapshot, { articleIds: ids });
    for (const id of ids) flow = flow.add(`article_${id}`, EtlArticleStats, { id }, { deps: ['snapshot'] });
    flow = flow.add('report', EtlReport, {}, { deps: ids.length ? ids.map((id) => `article_${id}`) : ['snapshot'] });
    const { flowId, runIds } = await this.durable.startFlow(flow);
    return { flowId, nodes: Object.keys(runIds).length, report: runIds.report, mermaid: `/flows/${flowId}/mermaid` };
  }

  /** `GET /flows/:id`: the flow's nodes (runs) with their statuses and results. */
  @Get(':id')
  async get(@Param('id') id: string) {
    const runs = await this.durable.listRuns({ flowId: id, limit: 1000 });
    if (runs.length === 0) throw new NotFoundException(`flow ${id} not found`);
    return runs.map((r) => ({ name: r.name, workflow: r.workflow, status: r.status, deps: r.deps, result: r.result, runId: r.id }));
  }

  /** `GET /flows/:id/mermaid`: the flow as a Mermaid flowchart (paste into any Mermaid renderer). */
  @Get(':id/mermaid')
  @Header('Content-Type', 'text/plain; charset=utf-8')
  async mermaid(@Param('id') id: string) {
    return (await this.graph(id)).toMermaid();
  }

  /** `GET /flows/:id/dot`: the flow as a Graphviz digraph. */
  @Get(':id/dot')
  @Header('Content-Type', 'text/plain; charset=utf-8')
  async dot(@Param('id') id: string) {
    return (await this.graph(id)).toDot();
  }

  private async graph(id: string) {
    try {
      return await this.durable.getFlowGraph(id);
    } catch (err) {
      if (err instanceof RunNotFoundError) throw new NotFoundException(`flow ${id} not found`);
      throw err;
    }
  }
}
