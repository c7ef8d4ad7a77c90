import { CanActivate, ExecutionContext, Inject, Injectable, Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { isObservable, lastValueFrom } from 'rxjs';
import { DASHBOARD_OPTIONS, type DurableDashboardOptions } from './dashboard.options';

/**
 * Runs the `guards` given to the dashboard on every dashboard route, after the app's global
 * guards. A guard class is taken from the app when it is a provider there, else made once.
 */
@Injectable()
export class DashboardGuard implements CanActivate {
  private readonly made = new Map<Type<CanActivate>, Promise<CanActivate>>();

  constructor(
    @Inject(DASHBOARD_OPTIONS) private readonly options: DurableDashboardOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    for (const g of this.options.guards ?? []) {
      const guard = typeof g === 'function' ? await this.instance(g) : g;
      const answer = guard.canActivate(context);
      const ok = isObservable(answer) ? await lastValueFrom(answer) : await answer;
      if (!ok) return false;
    }
    return true;
  }

  private instance(type: Type<CanActivate>): Promise<CanActivate> {
    let made = this.made.get(type);
    if (!made) {
      made = this.resolve(type);
      this.made.set(type, made);
    }
    return made;
  }

  private async resolve(type: Type<CanActivate>): Promise<CanActivate> {
    try {
      const found = this.moduleRef.get(type, { strict: false });
      if (found) return found;
    } catch {
      // not a provider of the app: made below
    }
    return this.moduleRef.create(type);
  }
}
