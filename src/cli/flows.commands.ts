import { flowNotFound } from '../errors/flow-not-found';
import type { FlowGraph } from '../flows/flow.graph';
import { checkedOption, NAME } from './args';
import type { Command, CommandContext, Output } from './command';
import { table } from './table';

/** The flow's nodes as a table, and as JSON (nodes and edges, with each node's run and status). */
function shown(graph: FlowGraph, text?: string): Output {
  const nodes = table(
    ['NODE', 'WORKFLOW', 'DEPS', 'STATUS', 'RUN'],
    graph.nodes.map((n) => [n.name, n.workflow, n.deps.join(', ') || null, n.status, n.runId]),
    'no nodes',
  );
  return { json: { flowId: graph.flowId, flowName: graph.flowName, nodes: graph.nodes, edges: graph.edges }, text: text ? `${text}\n${nodes}` : nodes };
}

const graphOf = async (ctx: CommandContext, flowId: string) => (await ctx.connection.durable()).getFlowGraph(flowId).catch(notFound(flowId));

/** Rethrows `err` as the flow it is when the API did not find flow `flowId` (see {@link flowNotFound}). */
const notFound =
  (flowId: string) =>
  (err: unknown): never => {
    throw flowNotFound(flowId, err);
  };

/** `flows …`: show a flow's nodes, run part of it again. */
export const flowsCommands: Command[] = [
  {
    name: 'flows get',
    args: ['<id>'],
    options: {},
    summary: 'a flow’s nodes: workflow, deps, status and run of each',
    async run(ctx) {
      return shown(await graphOf(ctx, ctx.args[0]));
    },
  },
  {
    name: 'flows rerun',
    args: ['<id>'],
    required: ['--from <node>'],
    options: { '--from <node>': 'the node to run again, with every node downstream of it' },
    summary: 'runs a node of a flow and everything downstream of it again, reusing the other nodes’ results',
    async run(ctx) {
      const [id] = ctx.args;
      const from = checkedOption(ctx.parsed, 'from', NAME)!; // required: checked with the command line
      const { runIds } = await (await ctx.connection.durable()).rerunFlow(id, { from }).catch(notFound(id));
      const out = shown(await graphOf(ctx, id), `ran again from "${from}": ${Object.keys(runIds).length} node(s)`);
      return { json: { flowId: id, from, runIds, graph: out.json }, text: out.text };
    },
  },
];
