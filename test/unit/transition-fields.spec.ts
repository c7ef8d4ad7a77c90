import { TRANSITION_FIELDS, transitionFields, transitionTuple } from '../../src/store/transition.fields';
import type { Transition } from '../../src/store/runs.types';

describe('transition fields', () => {
  it('a transition is sent with its fields in the order the statement reads them', () => {
    // each field's value is its own name: the tuple must list the names in TRANSITION_FIELDS order
    const named = Object.fromEntries(TRANSITION_FIELDS.map((f) => [f, f])) as unknown as Transition;
    expect(transitionTuple(named)).toEqual(TRANSITION_FIELDS);
  });

  it('the statement reads field i under its name, jsonb fields with JSON null as SQL NULL', () => {
    const sql = transitionFields('e');
    const columns = sql.split(/, (?=\(e->|e->|nullif\()/);
    expect(columns).toHaveLength(TRANSITION_FIELDS.length);
    columns.forEach((column, i) => expect(column).toMatch(new RegExp(`e->>?${i}\\b.* AS ${TRANSITION_FIELDS[i]}$`)));
    expect(columns[TRANSITION_FIELDS.indexOf('context')]).toBe(`nullif(e->${TRANSITION_FIELDS.indexOf('context')}, 'null'::jsonb) AS context`);
  });
});
