import type { Provider } from '@nestjs/common';
import type { ResolvedOptions } from '../options/resolve-options';
import { resolveOptions } from '../options/resolve-options';
import { DURABLE_OPTIONS } from '../options/durable.module-definition';
import { ActivityStore } from '../store/activity.store';
import { ControlsStore } from '../store/controls.store';
import { DefinitionsStore } from '../store/definitions.store';
import { EventsStore } from '../store/events.store';
import { FlowsStore } from '../store/flows.store';
import { HistoryStore } from '../store/history.store';
import { HooksStore } from '../store/hooks.store';
import { MemosStore } from '../store/memos.store';
import { NodesStore } from '../store/nodes.store';
import { RunsStore } from '../store/runs.store';
import { SchedulesStore } from '../store/schedules.store';
import { WaitsStore } from '../store/waits.store';
import { channelOf, RESOLVED_OPTIONS } from './durable.constants';

/** One store per table, each made once for the module's schema. */
const store = (type: new (schema: string, channel: string) => object): Provider => ({
  provide: type,
  inject: [RESOLVED_OPTIONS],
  useFactory: (o: ResolvedOptions) => new type(o.schema, channelOf(o.schema)),
});

/** The resolved options and every store, as providers of the module. */
export const coreProviders: Provider[] = [
  { provide: RESOLVED_OPTIONS, inject: [DURABLE_OPTIONS], useFactory: resolveOptions },
  ...[
    RunsStore,
    NodesStore,
    MemosStore,
    ActivityStore,
    EventsStore,
    WaitsStore,
    FlowsStore,
    HooksStore,
    SchedulesStore,
    HistoryStore,
    ControlsStore,
    DefinitionsStore,
  ].map((t) => store(t)),
];
