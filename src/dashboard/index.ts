export { DurableDashboardModule } from './dashboard.module';
export type { DurableDashboardOptions, DurableDashboardAsyncOptions, DashboardAction } from './dashboard.options';
export { DASHBOARD_CSP } from './dashboard.headers';
