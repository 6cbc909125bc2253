// Drives rastrod's federated API through Convex's own HTTP client, exactly as
// a dashboard built on `convex` would: `ConvexHttpClient`, `setAuth(<JWT>)`,
// `rastroFederation:<name>` references. tests/it/federation/convex.rs runs it
// against a live rastrod and checks what it prints (one JSON object).
//
// usage: node client.mjs <url> <configure JWT> <read-only JWT> <siteId> <outsideSiteId> <from> <to>
import { ConvexHttpClient } from "convex/browser";
import { anyApi } from "convex/server";
import { ConvexError } from "convex/values";

const [url, adminToken, readerToken, siteId, outside, from, to] = process.argv.slice(2);
const api = anyApi.rastroFederation;
const options = { skipConvexDeploymentUrlCheck: true, logger: false };
const range = { from: Number(from), to: Number(to) };

/** A call that must fail: how the client surfaced it. */
async function refused(call) {
  try {
    const value = await call();
    return { ok: true, value };
  } catch (e) {
    return { convexError: e instanceof ConvexError, code: e.data?.code ?? null, message: String(e.message) };
  }
}

const out = {};
const anonymous = new ConvexHttpClient(url, options);
out.manifest = await anonymous.query(api.manifest, {});
out.unauthenticated = await refused(() => anonymous.query(api.listSites, {}));

const admin = new ConvexHttpClient(url, options);
admin.setAuth(adminToken);
out.leadsReport = await admin.query(api.leadsReport, { siteIds: [siteId], ...range });
out.updateSite = await admin.mutation(api.updateSite, { siteId, name: "Loja pelo Convex" });
out.setMetaEventMap = await admin.mutation(api.setMetaEventMap, { siteId, columns: { agendado: "Schedule" } });
out.metaConnection = await admin.query(api.metaConnection, {});
if (out.manifest.functions.includes("metaStatus")) {
  out.metaStatus = await admin.query(api.metaStatus, { siteIds: [siteId] });
}
out.siteDenied = await refused(() => admin.query(api.leadsReport, { siteIds: [outside], ...range }));
out.invalidScope = await refused(() => admin.query(api.leadsReport, { siteIds: [siteId, siteId], ...range }));
out.wrongKind = await refused(() => admin.query(api.updateSite, { siteId, name: "x" }));

const reader = new ConvexHttpClient(url, options);
reader.setAuth(readerToken);
out.readerSites = await reader.query(api.listSites, {});
// Web analytics as a dashboard polls it: the day's overview, and sessions page by page
// with usePaginatedQuery's options (an `id`, a null cursor, then the continueCursor).
const dayFrom = Math.floor(Number(to) / 86400000) * 86400000;
out.overview = await reader.query(api.overview, { siteIds: [siteId], from: dayFrom, to: dayFrom + 86400000 - 1 });
const page = (cursor) => reader.query(api.listSessions, {
  siteId, from: dayFrom, to: dayFrom + 86400000 - 1, paginationOpts: { numItems: 1, cursor, id: 7 },
});
out.sessionsFirst = await page(null);
out.sessionsSecond = await page(out.sessionsFirst.continueCursor);
out.configureForbidden = await refused(() => reader.mutation(api.updateSite, { siteId, name: "x" }));

console.log(JSON.stringify(out));
