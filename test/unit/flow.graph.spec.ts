import { FlowBuilder, FlowGraph, Step, Workflow } from '../../src';

@Workflow('MyApp.BackupPost')
class BackupPost {
  @Step()
  async run() {}
}

@Workflow('MyApp.DeleteAccount')
class DeleteAccount {
  @Step()
  async run() {}
}

describe('FlowBuilder', () => {
  it('chains add() and keeps nodes in order, with workflow names from classes or strings', () => {
    const b = new FlowBuilder({ name: 'etl' }).add('a', BackupPost, { id: 1 }).add('b', 'MyApp.DeleteAccount', undefined, { deps: ['a'], ignoreFailed: true });
    expect(b.nodes.map((n) => [n.name, n.workflow, n.input, n.deps])).toEqual([
      ['a', 'MyApp.BackupPost', { id: 1 }, []],
      ['b', 'MyApp.DeleteAccount', null, ['a']],
    ]);
    expect(b.nodes[1].options.ignoreFailed).toBe(true);
    expect(b.id).toBeUndefined();
    expect(new FlowBuilder({ id: 'x' }).id).toBe('x');
  });

  it('copies deps (mutating the caller array later does not change the flow)', () => {
    const deps = ['a'];
    const b = new FlowBuilder().add('a', BackupPost).add('b', BackupPost, {}, { deps });
    deps.push('zzz');
    expect(b.nodes[1].deps).toEqual(['a']);
  });

  it('builds the spec dynamic example with loops (3 → 3 → 1 fan-out/fan-in)', () => {
    const range = [0, 1, 2];
    let b = new FlowBuilder().add('a', BackupPost);
    for (const k of range) b = b.add(`a_${k}`, BackupPost, {}, { deps: ['a'] });
    b = b.add('b', BackupPost, {}, { deps: range.map((k) => `a_${k}`) });
    expect(b.toGraph().edges).toHaveLength(6);
    expect(b.toGraph().dependants('a')).toEqual(['a_0', 'a_1', 'a_2']);
  });
});

describe('FlowGraph export', () => {
  const archive = () =>
    new FlowBuilder()
      .add('receipt', 'MyApp.FinalReceipt')
      .add('backup_1', BackupPost, {}, { deps: ['receipt'] })
      .add('backup_2', BackupPost, {}, { deps: ['receipt'] })
      .add('delete', DeleteAccount, {}, { deps: ['backup_1', 'backup_2'] });

  it('toMermaid: flowchart TD with name[Workflow] vertices, one line per edge', () => {
    expect(archive().toMermaid()).toBe(
      [
        'flowchart TD',
        '    receipt[MyApp.FinalReceipt] --> backup_1[MyApp.BackupPost]',
        '    receipt[MyApp.FinalReceipt] --> backup_2[MyApp.BackupPost]',
        '    backup_1[MyApp.BackupPost] --> delete[MyApp.DeleteAccount]',
        '    backup_2[MyApp.BackupPost] --> delete[MyApp.DeleteAccount]',
        '',
      ].join('\n'),
    );
  });

  it('toMermaid: lone nodes get their own line; odd names get safe ids and quoted labels', () => {
    const m = new FlowBuilder()
      .add('solo', 'W')
      .add('end', 'W')
      .add('a-1', 'odd [name]', {}, { deps: ['end'] })
      .add('q', 'w#1; "x"', {}, { deps: ['solo'] })
      .toMermaid();
    expect(m).toContain('    n_end[W] --> n_a_1["odd [name]"]');
    // an entity's own '#' escaped first, then the quotes
    expect(m).toContain('    solo[W] --> q["w#35;1; #quot;x#quot;"]');
  });

  it('toDot: a digraph with labelled vertices and edges', () => {
    const dot = archive().toDot();
    expect(dot.startsWith('digraph "flow" {\n')).toBe(true);
    expect(dot).toContain('  "receipt" [label="receipt\\nMyApp.FinalReceipt"];');
    expect(dot).toContain('  "backup_1" -> "delete";');
    expect(dot.trim().endsWith('}')).toBe(true);
  });

  it('toGraph: nodes and edges as data; statuses become Mermaid classes', () => {
    const g = new FlowGraph(
      [
        { name: 'a', workflow: 'W', deps: [], status: 'completed', runId: '1' },
        { name: 'b', workflow: 'W', deps: ['a'], status: 'waiting', runId: '2' },
      ],
      'f1',
      'etl',
    );
    expect(g.toJSON()).toMatchObject({ flowId: 'f1', flowName: 'etl', edges: [{ from: 'a', to: 'b' }] });
    expect(g.toMermaid()).toContain('class a completed');
    expect(g.toMermaid()).toContain('class b waiting');
    expect(g.toDot()).toContain('digraph "etl"');
    expect(archive().toGraph().node('delete')!.deps).toEqual(['backup_1', 'backup_2']);
  });
});
