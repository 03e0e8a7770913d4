// undici with `request` adding the bearer token for the gateway's origin (see node20.mjs).
import { request as undiciRequest } from 'undici';
export * from 'undici';

export function request(url, options = {}, ...rest) {
  const auth = globalThis.__koshaConformanceAuth;
  if (!auth || !auth.sameOrigin(new URL(String(url)))) return undiciRequest(url, options, ...rest);
  const headers = { ...options.headers };
  if (!Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')) headers.Authorization = auth.bearer;
  return undiciRequest(url, { ...options, headers }, ...rest);
}
