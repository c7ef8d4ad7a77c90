import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { DurableModuleOptions } from './durable-options.interface';

/** forRoot / forRootAsync and the options token, generated the Nest way. */
export const {
  ConfigurableModuleClass: DurableConfigurableModule,
  MODULE_OPTIONS_TOKEN: DURABLE_OPTIONS,
  OPTIONS_TYPE: DURABLE_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: DURABLE_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DurableModuleOptions>()
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
