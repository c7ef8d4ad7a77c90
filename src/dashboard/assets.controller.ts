import { Controller, Get, Header, UseGuards } from '@nestjs/common';
import { DASHBOARD_CSS, DASHBOARD_JS } from './assets';
import { DashboardGuard } from './dashboard.guard';

/** The dashboard's stylesheet and script (behind the same guards as its pages). */
@Controller('assets')
@UseGuards(DashboardGuard)
export class AssetsController {
  @Get('dashboard.css')
  @Header('Content-Type', 'text/css; charset=utf-8')
  css(): string {
    return DASHBOARD_CSS;
  }

  @Get('dashboard.js')
  @Header('Content-Type', 'text/javascript; charset=utf-8')
  js(): string {
    return DASHBOARD_JS;
  }
}
