// kairos's TypeScript client: the API (Kairos), its errors (KairosError)
// and the receiver's check of a callback's signatures (verifyCallback).
export { Kairos } from "./client.js";
export type { KairosOptions } from "./client.js";
export { KairosError, parseRetryAfter } from "./errors.js";
export { VerificationError, verifyCallback, verifyRequest, signCallback } from "./verify.js";
export type { HeadersLike, KairosClaims, VerifiedCallback, VerifyOptions } from "./verify.js";
export { notificationBody } from "./notification.js";
export type * from "./types.js";
