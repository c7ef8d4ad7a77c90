import { jsonDiff } from '../../src/dashboard/diff';
import { escapeHtml, markup, raw } from '../../src/dashboard/html';
import { parseRunsSearch, searchValue, SearchError } from '../../src/dashboard/search';

const ID = '01936f7e-1234-7abc-8def-0123456789ab';

describe('dashboard: the runs search grammar', () => {
  it('splits each term at its first colon, reads quoted values, and combines terms', () => {
    expect(parseRunsSearch('key:article:42')).toEqual({ key: 'article:42' });
    expect(parseRunsSearch('  workflow:process_article   key:"monthly report"  status:failed status:cancelled')).toEqual({
      workflow: 'process_article',
      key: 'monthly report',
      status: ['failed', 'cancelled'],
    });
    expect(parseRunsSearch('key:say"hi"')).toEqual({ key: 'say"hi"' });
    expect(parseRunsSearch(`flow:f-1 parent:${ID} waiting:child`)).toEqual({ flowId: 'f-1', parentId: ID, waitingFor: 'children' });
    expect(parseRunsSearch('waiting:deps')).toEqual({ waitingFor: 'deps' });
    expect(parseRunsSearch(ID)).toEqual({ id: ID });
    expect(parseRunsSearch(`id:${ID}`)).toEqual({ id: ID });
    expect(parseRunsSearch('')).toEqual({});
  });

  it.each([
    ['colour:red', 'unknown qualifier "colour:"'],
    ['status:sleepy', 'status:sleepy is not a status'],
    ['waiting:forever', 'waiting:forever is not a wait'],
    ['parent:nope', 'parent:nope is not a run id'],
    ['id:nope', 'id:nope is not a run id'],
    ['key:', 'key: needs a value'],
    ['key:"open ended', 'a quote is left open'],
    ['"bare open', 'a quote is left open'],
    ['hello', '"hello" is not a run id'],
  ])('refuses %s with a message', (q, message) => {
    expect(() => parseRunsSearch(q)).toThrow(SearchError);
    expect(() => parseRunsSearch(q)).toThrow(message);
  });

  it('searchValue quotes a value with a space, and what it writes reads back', () => {
    for (const key of ['article:42', 'monthly report', 'a"b']) expect(parseRunsSearch(`key:${searchValue(key)}`)).toEqual({ key });
  });
});

describe('dashboard: the JSON diff of a dropped input', () => {
  it('lists each changed path with both values, absent ones as undefined', () => {
    expect(jsonDiff({ title: 'a', tags: ['x', 'y'], n: 1 }, { title: 'b', tags: ['x'], extra: { deep: true }, n: 1 })).toEqual([
      { path: '$.extra', before: undefined, after: { deep: true } },
      { path: '$.tags[1]', before: 'y', after: undefined },
      { path: '$.title', before: 'a', after: 'b' },
    ]);
    expect(jsonDiff({ 'odd key': 1 }, { 'odd key': 2 })).toEqual([{ path: '$["odd key"]', before: 1, after: 2 }]);
    expect(jsonDiff(1, 'one')).toEqual([{ path: '$', before: 1, after: 'one' }]);
    expect(jsonDiff({ a: [1, { b: null }] }, { a: [1, { b: null }] })).toEqual([]);
  });
});

describe('dashboard: markup escapes every value', () => {
  it('escapes interpolated text and keeps only markup made by the dashboard', () => {
    const hostile = `<script>alert("x")</script>' onerror=\`x\``;
    expect(markup`<td title="${hostile}">${hostile}</td>`.value).toBe(`<td title="${escapeHtml(hostile)}">${escapeHtml(hostile)}</td>`);
    expect(escapeHtml(hostile)).not.toMatch(/[<>"'`]/);
    expect(markup`<p>${[raw('<b>'), 'x<y', null, undefined, false, 0]}</p>`.value).toBe('<p><b>x&lt;y0</p>');
  });
});
