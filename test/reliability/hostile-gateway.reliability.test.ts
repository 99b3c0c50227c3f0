/**
 * Reliability: a hostile gateway (test/reliability/hostile-gateway.ts, in front of the simulator)
 * against the daemon on a real SQLite file. Each input once stopped monitoring or ate memory:
 * one record out of range blinded the fleet, an endless body grew the daemon to gigabytes, a Date
 * header in 2100 fired `stale` everywhere and stored times in 1953, details that hang held a
 * cycle for a minute while a disconnect waited. Now each is bounded and the fleet stays watched.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startHostileGateway, rewriteJson, type HostileGateway } from './hostile-gateway.js';
import { startRig, type Rig } from './rig.js';

let rig: Rig | undefined;
let gw: HostileGateway | undefined;
afterEach(async () => {
  await rig?.close();
  await gw?.close();
  rig = undefined;
  gw = undefined;
});

const LIST = /\/box\/device-list/;
const DETAILS = /\/box\/device\//;

async function hostileRig(options: Parameters<typeof startRig>[0] = {}): Promise<{ rig: Rig; gw: HostileGateway }> {
  gw = await startHostileGateway();
  rig = await startRig({ ...options, gatewayUrl: gw.url });
  gw.target = rig.sim.url;
  return { rig, gw };
}

const firing = (r: Rig): string[] => r.transitions().filter((t) => t.endsWith(':firing'));

describe('a hostile gateway', () => {
  it('one record out of range is set aside: the rest of the fleet is watched and a disconnect alerts', async () => {
    const { rig: r, gw: g } = await hostileRig();
    const [odd, other] = r.sim.sim.fleet.boxes.map((b) => b.serial) as [string, string];
    await r.cycle(0);
    g.intercept = (req, res, upstream) =>
      LIST.test(req.url ?? '') &&
      rewriteJson(res, upstream, (body) => {
        const rec = (body.data as { serial_no: string; battery_level: number | null }[]).find((d) => d.serial_no === odd);
        if (rec) rec.battery_level = 12.5;
      });
    r.sim.sim.fleet.apply([r.sim.sim.fleet.boxes[1]!], { kind: 'disconnect' });
    await r.cycle();
    await r.cycle();
    await r.cycle();

    expect(r.cycles()).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(firing(r)).toEqual(expect.arrayContaining(['gateway_schema::firing', `box-offline:${other}:firing`]));
    const mailed = r.smtp.messages.map((m) => m.text).join('\n');
    expect(mailed).toContain(`box ${other}`);
    expect(mailed).toContain(`${odd}: data[0]: battery_level: expected int, received number`);
    expect(r.app.store.box(odd)?.missingSince).toBeNull(); // listed, just unreadable: not missing
    expect(r.logs.filter((l) => l.msg.startsWith('invalid gateway record set aside') && l['serial'] === odd)).toHaveLength(1);
    expect(await r.app.metrics.text()).toMatch(/boxwatch_gateway_records_rejected_total 3/);
  });

  it('an endless device-list body is aborted at the limit and counted; gateway_schema fires; polling recovers', async () => {
    const { rig: r, gw: g } = await hostileRig({ gatewayYaml: 'max_body: { device_list: 1MiB }' });
    let sent = 0;
    g.intercept = (req, res) => {
      if (!LIST.test(req.url ?? '')) return false;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"status":"success","data":[');
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = (): void => {
        while (!res.destroyed && sent < 1024 ** 3) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      pump();
      return true;
    };
    await r.cycle(0);
    await r.cycle();
    expect(r.cycles()).toEqual(['failed:too_large', 'failed:too_large']);
    expect(sent).toBeLessThan(256 * 1024 * 1024);
    expect(r.app.store.lastCycle()?.error).toBe('the device_list response is larger than 1048576 bytes (gateway.max_body.device_list); aborted');
    expect(firing(r)).toEqual(['gateway_schema::firing']);
    expect(await r.app.metrics.text()).toMatch(/boxwatch_gateway_requests_total\{endpoint="device_list",outcome="too_large"\} 2/);

    g.intercept = null;
    await r.cycle();
    expect(r.cycles().at(-1)).toBe('ok');
    expect(r.app.store.boxes()).toHaveLength(10);
  });

  it('a 10 MB device name and a 100 KB location are stored, e-mailed and exposed capped at 200 characters, marked as cut', async () => {
    const { rig: r, gw: g } = await hostileRig();
    const serial = r.sim.sim.fleet.boxes[0]!.serial;
    const huge = `Lobby ${'x'.repeat(10 * 1024 * 1024)}`;
    g.intercept = (req, res, upstream) => {
      const url = req.url ?? '';
      if (!LIST.test(url) && !url.endsWith(`/box/device/${serial}`)) return false;
      return rewriteJson(res, upstream, (body) => {
        const records = Array.isArray(body.data) ? body.data : [body.data];
        for (const d of records as { serial_no: string; device_name: string; location?: string }[]) {
          if (d.serial_no !== serial) continue;
          // 10 MB fits the list's limit (32 MiB); details carry 100 KB (their limit is 256 KiB).
          d.device_name = d.location === undefined ? huge : huge.slice(0, 100_000);
          if (d.location !== undefined) d.location = huge.slice(0, 100_000);
        }
      });
    };
    r.sim.sim.fleet.apply([r.sim.sim.fleet.boxes[0]!], { kind: 'disconnect' });
    await r.cycle(0);
    const box = r.app.store.box(serial);
    expect(box?.name).toHaveLength(200);
    expect(box?.name.endsWith('…[truncated]')).toBe(true);
    expect(box?.location).toHaveLength(200);
    const mail = r.smtp.messages.find((m) => m.subject.includes(serial));
    expect(mail).toBeDefined();
    expect(mail!.text.length).toBeLessThan(10_000);
    expect(mail!.html.length).toBeLessThan(20_000);
    expect(r.slack.received.every((w) => JSON.stringify(w.body).length < 20_000)).toBe(true);
    expect((await r.app.metrics.text()).length).toBeLessThan(200_000);
  });

  it.each([
    ['2100', 'Fri, 01 Jan 2100 00:00:00 GMT', 'ahead'],
    ['2000', 'Sat, 01 Jan 2000 00:00:00 GMT', 'behind'],
  ])('a Date header in %s is ignored and raises gateway_clock; no box goes stale, no time is stored in 1953', async (_year, date, direction) => {
    const { rig: r, gw: g } = await hostileRig();
    g.intercept = (req, res, upstream) => LIST.test(req.url ?? '') && rewriteJson(res, upstream, () => undefined, { date });
    await r.cycle(0);
    await r.cycle();
    expect(r.cycles()).toEqual(['ok', 'ok']);
    expect(firing(r)).toEqual(['gateway_clock::firing']);
    expect(r.smtp.messages.map((m) => m.text).join('\n')).toContain(direction);
    for (const b of r.app.store.boxes()) {
      expect(Math.abs(b.lastSeen - r.clock.now())).toBeLessThan(86_400_000);
    }
    g.intercept = null;
    await r.cycle();
    expect(r.transitions()).toContain('gateway_clock::resolved');
  });

  it('details that hang: the cycle ends at its deadline, those boxes keep their details, and a disconnect alerts', async () => {
    const { rig: r, gw: g } = await hostileRig({ devices: 40, gatewayTimeoutMs: 120_000, concurrency: 8 });
    await r.cycle(0); // every box known, with details
    const held: { destroy: () => void }[] = [];
    g.intercept = (req, res) => {
      if (!DETAILS.test(req.url ?? '')) return false;
      held.push(res); // never answered
      return true;
    };
    const victim = r.sim.sim.fleet.boxes[3]!.serial;
    r.sim.sim.fleet.apply([r.sim.sim.fleet.boxes[3]!], { kind: 'disconnect' });
    r.clock.advance(300_000); // poll.details_every: every box's details are due
    const running = r.app.runOnce();
    await expect.poll(() => held.length, { timeout: 10_000 }).toBe(8); // gateway.concurrency requests hang
    r.clock.advance(27_000); // the deadline: 0.9 x the 30 s schedule
    const result = await running;
    expect(result?.cycle).toMatchObject({ outcome: 'ok', boxes: 40 });
    expect(result?.cycle.detailsSkipped).toBeGreaterThan(0);
    expect(r.transitions()).toContain(`box-offline:${victim}:firing`);
    expect(r.app.store.boxes().every((b) => b.detailsAt !== null && b.signal !== null)).toBe(true);
    expect(await r.app.metrics.text()).toMatch(/boxwatch_poll_details_skipped_total [1-9]/);
    for (const h of held) h.destroy();
  });
});
