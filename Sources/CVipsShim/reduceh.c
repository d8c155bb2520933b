#include "shim.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A horizontal Lanczos3 reduction of 8-bit images that gives the same pixels as libvips 8.14's
 * vips_reduceh(kernel = lanczos3), several times faster: libvips runs it as a scalar loop over a run-time
 * number of taps and bands, and it was the largest single cost of making a 1920 px copy of a phone photo.
 * Here the taps and bands are compile-time constants for the cases the image path meets (3 bands, 7 to 25
 * taps: a reduction by less than 4), so the compiler unrolls them, and on x86-64 with AVX2 the taps are
 * summed four at a time in 16-bit lanes instead; anything else goes to vips_reduceh.
 *
 * The arithmetic is libvips': a table of 65 masks for sub-pixel offsets in 1/64ths, each the Lanczos3
 * window over `taps` points scaled by the shrink, normalised to sum 1 and truncated to 12-bit fixed point;
 * output pixel x is centred on input (x + 0.5) * shrink - 0.5, moved by half the pixels the rounded
 * output width invents or drops, stepped as libvips steps it; edge pixels are repeated. ImageReductionTests compares the outputs with
 * libvips' own on the fixtures. */

enum { FIXED_SHIFT = 12, FIXED_ONE = 1 << FIXED_SHIFT, SUBPIXELS = 64, MAX_TAPS = 64 };

static double sinc(double x) {
    if (x == 0.0) return 1.0;
    x *= M_PI;
    return sin(x) / x;
}

static double lanczos3(double x) {
    return (x >= -3 && x <= 3) ? sinc(x) * sinc(x / 3) : 0.0;
}

static int lanczos3_taps(double shrink) {
    return 2 * (int) rint(3 * shrink) + 1;
}

static inline unsigned char fixed_to_pel(int sum) {
    sum = (sum + (FIXED_ONE >> 1)) >> FIXED_SHIFT;
    return sum < 0 ? 0 : sum > 255 ? 255 : (unsigned char) sum;
}

/* One row, pixels [from, to) whose taps all lie inside the row. */
#define REDUCE_ROW(TAPS, BANDS)                                                                             \
    static void reduce_row_##TAPS##_##BANDS(const unsigned char *row, unsigned char *out, ptrdiff_t step,    \
                                            int from, int to, const int *first, const int *weights) {         \
        for (int x = from; x < to; x++) {                                                                    \
            const unsigned char *p = row + (size_t) first[x] * BANDS;                                        \
            const int *w = weights + (size_t) x * TAPS;                                                      \
            int sum[BANDS] = {0};                                                                            \
            for (int i = 0; i < TAPS; i++)                                                                   \
                for (int z = 0; z < BANDS; z++) sum[z] += w[i] * p[i * BANDS + z];                           \
            for (int z = 0; z < BANDS; z++) out[x * step + z] = fixed_to_pel(sum[z]);                        \
        }                                                                                                    \
    }
REDUCE_ROW(7, 3) REDUCE_ROW(9, 3) REDUCE_ROW(11, 3) REDUCE_ROW(13, 3) REDUCE_ROW(15, 3)
REDUCE_ROW(17, 3) REDUCE_ROW(19, 3) REDUCE_ROW(21, 3) REDUCE_ROW(23, 3) REDUCE_ROW(25, 3)

#if defined(__x86_64__)
#include <immintrin.h>

/* Any odd number of taps, three bands, with AVX2: taps go four at a time. Their 12 bytes are loaded into both
 * halves of a register; the low half spreads taps 0 and 1 into 16-bit lanes (r, r', g, g', b, b'), the high half
 * taps 2 and 3, and pmaddwd multiplies each by its pair of weights, giving r, g and b partial sums in 32-bit
 * lanes of each half, added together at the end (integer sums: the same as libvips' in any order). `quads` holds
 * each pixel's weights as (w0, w1) × 4, (w2, w3) × 4, (w4, w5) × 4, …, past the last tap 0. Reads 16 bytes from
 * each quad's first tap, so it is used only where those lie inside the row. */
__attribute__((target("avx2")))
static void reduce_row_quads_3_avx2(const unsigned char *row, unsigned char *out, ptrdiff_t step, int from, int to,
                                    const int *first, const short *quads, int quad_count) {
    const __m256i spread = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,
                                            6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
    const __m128i half = _mm_set1_epi32(FIXED_ONE >> 1);
    for (int x = from; x < to; x++) {
        const unsigned char *p = row + (size_t) first[x] * 3;
        const __m256i *w = (const __m256i *) (quads + (size_t) x * quad_count * 16);
        __m256i sums = _mm256_setzero_si256();
        for (int k = 0; k < quad_count; k++) {
            const __m256i four = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) (p + k * 12))),
                                                     spread);
            sums = _mm256_add_epi32(sums, _mm256_madd_epi16(four, _mm256_loadu_si256(w + k)));
        }
        __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
        sum = _mm_srai_epi32(_mm_add_epi32(sum, half), FIXED_SHIFT);
        const int packed = _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(sum, sum), _mm_setzero_si128()));
        memcpy(out + x * step, &packed, 3);
    }
}
#endif

typedef void (*ReduceRow)(const unsigned char *, unsigned char *, ptrdiff_t, int, int, const int *, const int *);

static ReduceRow unrolled_row(int taps) {
    switch (taps) {
    case 7: return reduce_row_7_3;
    case 9: return reduce_row_9_3;
    case 11: return reduce_row_11_3;
    case 13: return reduce_row_13_3;
    case 15: return reduce_row_15_3;
    case 17: return reduce_row_17_3;
    case 19: return reduce_row_19_3;
    case 21: return reduce_row_21_3;
    case 23: return reduce_row_23_3;
    case 25: return reduce_row_25_3;
    default: return NULL;
    }
}

/* Pixels near the edges: edge pixels repeated. */
static void reduce_pixel_clamped(const unsigned char *row, unsigned char *out, int width, int bands, int taps,
                                 int first, const int *w) {
    for (int z = 0; z < bands; z++) {
        int sum = 0;
        for (int i = 0; i < taps; i++) {
            int p = first + i;
            p = p < 0 ? 0 : p >= width ? width - 1 : p;
            sum += w[i] * row[(size_t) p * bands + z];
        }
        out[z] = fixed_to_pel(sum);
    }
}

/* Where pixel (x, y) of the reduced image (width × height) goes in the upright one, for EXIF orientation 1-8:
 * what vips_autorot does (turns of 90, 180 or 270 degrees, mirrors). */
static void upright_position(int orientation, int x, int y, int width, int height, int *to_x, int *to_y) {
    switch (orientation) {
    case 2: *to_x = width - 1 - x; *to_y = y; break;
    case 3: *to_x = width - 1 - x; *to_y = height - 1 - y; break;
    case 4: *to_x = x; *to_y = height - 1 - y; break;
    case 5: *to_x = y; *to_y = x; break;
    case 6: *to_x = height - 1 - y; *to_y = x; break;
    case 7: *to_x = height - 1 - y; *to_y = width - 1 - x; break;
    case 8: *to_x = y; *to_y = width - 1 - x; break;
    default: *to_x = x; *to_y = y; break;
    }
}

/* The reduction, written straight into its upright place for `orientation` (1: as it is), so a photo's EXIF
 * turn costs no pass of its own. */
static int reduceh_upright(VipsImage *in, VipsImage **out, double shrink, int orientation) {
    const int taps = lanczos3_taps(shrink);
    const ReduceRow row_fn = unrolled_row(taps);
    if (in->BandFmt != VIPS_FORMAT_UCHAR || in->Coding != VIPS_CODING_NONE || in->Bands != 3 || shrink < 1.0 || !row_fn) {
        if (orientation == 1) return vips_reduceh(in, out, shrink, "kernel", VIPS_KERNEL_LANCZOS3, NULL);
        VipsImage *reduced = NULL;
        if (vips_reduceh(in, &reduced, shrink, "kernel", VIPS_KERNEL_LANCZOS3, NULL)) return -1;
        const int result = vips_autorot(reduced, out, NULL);
        g_object_unref(reduced);
        return result;
    }
    if (vips_image_wio_input(in)) return -1;
    const int width = in->Xsize, height = in->Ysize, bands = 3;
    const int out_width = (int) (width / shrink + 0.5);
    if (out_width <= 0) {
        vips_error("sluice_reduceh_lanczos3", "image has shrunk to nothing");
        return -1;
    }
    const gboolean turned = orientation >= 5 && orientation <= 8;
    VipsImage *result = vips_image_new_memory();
    if (vips_image_pipelinev(result, VIPS_DEMAND_STYLE_THINSTRIP, in, NULL)) {
        g_object_unref(result);
        return -1;
    }
    result->Xsize = turned ? height : out_width;
    result->Ysize = turned ? out_width : height;
    if (turned) {
        const double xres = result->Xres;
        result->Xres = result->Yres;
        result->Yres = xres;
    }
    /* As vips_autorot: the orientation goes, and so does the EXIF field libvips parsed it from. */
    if (orientation != 1) {
        vips_image_remove(result, VIPS_META_ORIENTATION);
        vips_image_remove(result, "exif-ifd0-Orientation");
    }
    if (vips_image_write_prepare(result)) {
        g_object_unref(result);
        return -1;
    }

    /* The masks, then each output pixel's first tap and its mask. */
    int masks[SUBPIXELS + 1][MAX_TAPS];
    for (int t = 0; t <= SUBPIXELS; t++) {
        double c[MAX_TAPS], sum = 0;
        const double half = (double) t / SUBPIXELS + taps / 2.0 - 1;
        for (int i = 0; i < taps; i++) {
            c[i] = lanczos3((i - half) / shrink);
            sum += c[i];
        }
        for (int i = 0; i < taps; i++) masks[t][i] = (int) (c[i] / sum * FIXED_ONE);
    }
    int *first = g_new(int, out_width);
    int *weights = g_new(int, (size_t) out_width * taps);
    /* Positions as libvips steps them: from half a step in, moved back by half the pixels the rounded output
     * width invents, then one `shrink` per pixel, added up (not multiplied out: the sums round differently,
     * and the sub-pixel is read off them). Never negative, so the truncations round down. */
    const int lead = (taps + 1) / 2 - 1;
    double position = 0.5 * shrink - 0.5 - ((1 + (out_width * shrink - width)) / 2.0 - 1);
    int inside_from = out_width, inside_to = 0;
    for (int x = 0; x < out_width; x++, position += shrink) {
        const int sub = (((int) (position * SUBPIXELS * 2)) & (SUBPIXELS * 2 - 1));
        first[x] = (int) position - lead;
        memcpy(weights + (size_t) x * taps, masks[(sub + 1) >> 1], sizeof(int) * taps);
        if (first[x] >= 0 && first[x] + taps <= width) {
            if (x < inside_from) inside_from = x;
            inside_to = x + 1;
        }
    }
    const size_t in_stride = VIPS_IMAGE_SIZEOF_LINE(in), out_stride = VIPS_IMAGE_SIZEOF_LINE(result);
#if defined(__x86_64__)
    /* The AVX2 row: weights as 16-bit pairs, and pixels whose last quad's 16 bytes lie inside the row; the
     * unrolled row does the others. */
    short *weights16 = NULL;
    const int quad_count = (taps + 3) / 4;
    int vector_from = 0, vector_to = 0;
    if (__builtin_cpu_supports("avx2")) {
        weights16 = g_new0(short, (size_t) out_width * quad_count * 16);
        for (int x = 0; x < out_width; x++)
            for (int i = 0; i < taps; i++)
                for (int lane = 0; lane < 4; lane++)
                    weights16[(size_t) x * quad_count * 16 + (i / 4) * 16 + ((i / 2) % 2) * 8 + lane * 2 + i % 2] =
                        (short) weights[(size_t) x * taps + i];
        /* Lanczos3 weights stay well inside 16 bits (the largest is about 1.1 × 4096); should one not, the
         * unrolled rows do it all. */
        for (size_t i = 0; i < (size_t) out_width * taps; i++)
            if (weights[i] > 32767 || weights[i] < -32768) {
                g_free(weights16);
                weights16 = NULL;
                break;
            }
        /* The last quad's 16-byte load reaches (quad_count - 1) * 12 + 16 bytes from the first tap. */
        const int reach_bytes = (quad_count - 1) * 12 + 16;
        vector_from = inside_from;
        vector_to = inside_to;
        while (vector_to > vector_from && first[vector_to - 1] * 3 + reach_bytes > width * 3) vector_to--;
    }
#endif
    unsigned char *const pixels = VIPS_IMAGE_ADDR(result, 0, 0);
    for (int y = 0; y < height; y++) {
        const unsigned char *row = VIPS_IMAGE_ADDR(in, 0, 0) + in_stride * y;
        /* This row's pixel x goes to q + x * step in the upright image. */
        int x0, y0, x1, y1;
        upright_position(orientation, 0, y, out_width, height, &x0, &y0);
        upright_position(orientation, 1, y, out_width, height, &x1, &y1);
        unsigned char *q = pixels + (ptrdiff_t) out_stride * y0 + (ptrdiff_t) x0 * bands;
        const ptrdiff_t step = (ptrdiff_t) out_stride * (y1 - y0) + (ptrdiff_t) (x1 - x0) * bands;
#if defined(__x86_64__)
        if (weights16 && vector_from < vector_to) {
            reduce_row_quads_3_avx2(row, q, step, vector_from, vector_to, first, weights16, quad_count);
            if (vector_to < inside_to) row_fn(row, q, step, vector_to, inside_to, first, weights);
        } else
#endif
        if (inside_from < inside_to) row_fn(row, q, step, inside_from, inside_to, first, weights);
        /* Edge pixels: those before the first and after the last whose taps all lie inside. */
        const int edge_to = inside_from < inside_to ? inside_from : out_width;
        for (int x = 0; x < edge_to; x++)
            reduce_pixel_clamped(row, q + x * step, width, bands, taps, first[x], weights + (size_t) x * taps);
        for (int x = inside_from < inside_to ? inside_to : out_width; x < out_width; x++)
            reduce_pixel_clamped(row, q + x * step, width, bands, taps, first[x], weights + (size_t) x * taps);
    }
    g_free(first);
    g_free(weights);
#if defined(__x86_64__)
    g_free(weights16);
#endif
    *out = result;
    return 0;
}

int sluice_reduceh_lanczos3_upright(VipsImage *in, VipsImage **out, double shrink) {
    int orientation = 1;
    if (vips_image_get_typeof(in, VIPS_META_ORIENTATION) && vips_image_get_int(in, VIPS_META_ORIENTATION, &orientation))
        return -1;
    return reduceh_upright(in, out, shrink, orientation >= 1 && orientation <= 8 ? orientation : 1);
}
