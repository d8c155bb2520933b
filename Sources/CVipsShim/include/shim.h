#ifndef SLUICE_VIPS_SHIM_H
#define SLUICE_VIPS_SHIM_H
#include <stddef.h>
#include <vips/vips.h>

/* Fixed-argument wrappers over libvips' varargs API, so Swift never calls a C varargs function. */

/* Transforms from embedded ICC profiles to sRGB, built once per profile (icc.c). Thread-safe; free it only when no
 * call that was given it is running. */
typedef struct SluiceIccCache SluiceIccCache;
SluiceIccCache *sluice_icc_cache_new(void);
void sluice_icc_cache_free(SluiceIccCache *cache);

/* vips_icc_transform(in, "srgb", intent relative, embedded, depth 8) — the same pixels and the same metadata — with
 * the transform from `cache` when `in` is an 8-bit 3-band RGB image whose embedded profile it can hold (built the
 * way icc_transform builds it); anything else, or a NULL cache, goes to vips_icc_transform. Caller unrefs *out. */
int sluice_icc_to_srgb(SluiceIccCache *cache, VipsImage *in, VipsImage **out);

/* VIPS_INIT, blocks untrusted loaders (and magick, pdf, svg explicitly), disables the operation cache
 * and sets libvips' own worker threads. Returns 0 on success. Call once. */
int sluice_vips_init(int vips_threads);

/* Pipelines whose source has at most this many pixels are rendered on the calling thread; from a source in memory,
 * whose fitting's buffers are no larger than the source itself, up to SLUICE_RENDER_HERE_MAX_MEMORY_PIXELS. */
#define SLUICE_RENDER_HERE_MAX_PIXELS 2097152
#define SLUICE_RENDER_HERE_MAX_MEMORY_PIXELS 16777216

/* Whether `image`'s pixels are in memory already (a memory image, or a file mapped in), as vips_image_copy_memory
 * tells them apart. */
int sluice_vips_in_memory(VipsImage *image);

/* Whether a pipeline from `source` (a loaded image, or one in memory) is small enough to render on the calling
 * thread (the `here` of sluice_vips_render_memory). */
int sluice_vips_renders_here(VipsImage *source);

/* `in`'s pixels in a memory image (caller unrefs; NULL on error, libvips' error buffer saying why), the same pixels
 * and metadata as vips_image_copy_memory makes. With `here`, computed on the calling thread in one region over the
 * whole image; libvips' sink hands strips to a worker thread and waits on a semaphore for each, which for a small
 * image costs more than the strips (with one libvips thread it computes nothing in parallel). Every stage of the
 * pipeline then holds a buffer of its whole output, so `here` is for small sources only
 * (SLUICE_RENDER_HERE_MAX_PIXELS). An image in memory already is only referenced, as vips_image_copy_memory does. */
VipsImage *sluice_vips_render_memory(VipsImage *in, int here);

/* Name of the loader libvips would pick for this buffer, or NULL. */
const char *sluice_vips_loader(const void *buf, size_t len);

/* Header only: opens the buffer lazily (no pixel decode). Caller unrefs. */
VipsImage *sluice_vips_open_header(const void *buf, size_t len);

/* The one decode: shrink-on-load to fit width x height (only ever down), auto-rotate by EXIF orientation,
 * import any embedded ICC profile and export sRGB. `loader_options` such as "fail_on=warning".
 * `load_shrink` says who loads the image: 0 leaves loading and fitting to vips_thumbnail (WebP, GIF, HEIF: their
 * loaders shrink on load their own way); 1 or more has the shim load it itself, a JPEG at 1/`load_shrink` of its
 * size by libjpeg's DCT shrink (2, 4 or 8: the caller picks the largest that leaves the long side at least `width`),
 * 1 whole (a JPEG less than twice too large, a PNG), and then fit it as vips_thumbnail_image would: an 8-bit 3-band
 * sRGB image by libvips' reducev and sluice_reduceh_lanczos3_upright, then its embedded profile's transform to sRGB
 * (the same pixels, through `icc`'s cached transform), anything else by vips_thumbnail_image; `libvips_reduction` 1
 * fits with vips_thumbnail_image always (for comparison). */
int sluice_vips_thumbnail_buffer(const void *buf, size_t len, VipsImage **out, int width, int height,
                                 const char *loader_options, int has_icc_profile, int load_shrink, int libvips_reduction,
                                 SluiceIccCache *icc);

/* vips_reduceh(in, shrink, kernel = lanczos3) then vips_autorot, in one pass and with the same pixels: unrolled
 * (AVX2 on x86-64) for 8-bit images of 3 bands reduced by less than 4, the pixels written where `in`'s EXIF
 * orientation puts them upright; the result has no orientation tag. Other images go to libvips. `in` is made a
 * memory image first. Caller unrefs *out. */
int sluice_reduceh_lanczos3_upright(VipsImage *in, VipsImage **out, double shrink);

/* Whether the image carries an embedded ICC profile. */
int sluice_vips_has_icc(VipsImage *in);

/* Resize an already decoded image to fit width x height (only ever down), as vips_thumbnail_image does, with
 * sluice_reduceh_lanczos3_upright where that gives the same pixels (`libvips_reduction` 1: vips_thumbnail_image alone). */
int sluice_vips_thumbnail_image(VipsImage *in, VipsImage **out, int width, int height, int libvips_reduction);

/* Flatten alpha onto white. */
int sluice_vips_flatten_white(VipsImage *in, VipsImage **out);

/* Convert to 8-bit sRGB (grey, 16-bit and CMYK leftovers included). */
int sluice_vips_to_srgb(VipsImage *in, VipsImage **out);

/* Baseline JPEG with every metadata block (EXIF, XMP, IPTC, ICC) stripped, as vips_jpegsave_buffer(Q, strip)
 * makes it: an 8-bit sRGB image in memory is compressed on the calling thread (jpegsave.c, the same bytes), anything
 * else by libvips. Free *buf with g_free. */
int sluice_vips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, int quality);
/* The same, always by libvips (the reference the tests compare with). */
int sluice_vips_jpegsave_buffer_libvips(VipsImage *in, void **buf, size_t *len, int quality);

/* The raw EXIF block libvips found (JPEG APP1, PNG eXIf, WebP/HEIF EXIF), or 0 when none. */
int sluice_vips_exif_blob(VipsImage *in, const void **data, size_t *len);
/* The image's XMP packet (libvips' "xmp-data"): 1 and the bytes when it has one, else 0. */
int sluice_vips_xmp_blob(VipsImage *in, const void **data, size_t *len);

/* A copy of libvips' error buffer (caller frees with g_free), and clears it. */
char *sluice_vips_error_copy(void);

/* A width × height 3-band JPEG of stripes, edges and ramps (tests fit photos of any size with it), carrying the
 * ICC profile `profile` (NULL: none; written as it is) and EXIF `orientation` 1-8 (0: no EXIF). Free *buf with
 * g_free. */
int sluice_vips_pattern_jpeg(int width, int height, const void *profile, size_t profile_len, int orientation,
                             void **buf, size_t *len);

void sluice_vips_unref(VipsImage *image);
void sluice_g_free(void *p);

#endif

/* Decode (auto-rotated) and force-resize to width x height 8-bit sRGB pixels, for image comparison.
 * *out is g_malloc'd. */
int sluice_vips_rgb_pixels(const void *buf, size_t len, int width, int height, void **out, size_t *out_len);

/* Bytes that a zlib stream inflates to, counting at most `limit + 1` (so bombs stop early); -1 if corrupt. */
long sluice_inflated_size(const void *buf, size_t len, size_t limit);
