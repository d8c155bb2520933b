#include "shim.h"
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>
#include <jerror.h>

/* A JPEG save on the calling thread. vips_jpegsave_buffer writes through vips_sink_disc: a libvips worker thread
 * prepares each strip and a write-behind thread compresses it while the caller waits, so a small image's save is
 * mostly hand-overs between threads. For an image already in memory the strips are only pointers into it, and
 * libjpeg can be given its rows directly. The settings are the ones libvips 8.14's jpegsave uses with "strip"
 * (vips2jpeg.c, write_vips): libjpeg's defaults, Huffman tables not optimised, jpeg_set_quality(Q, force
 * baseline), chroma not subsampled from Q 90 (subsample_mode auto), no restart markers, no JFIF, EXIF, XMP, IPTC
 * or ICC marker. ImageReductionTests compares the bytes with libvips' own save. */

typedef struct {
    struct jpeg_error_mgr manager;
    struct jpeg_destination_mgr destination;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    /* The JPEG so far, g_malloc'd and grown here (not in locals, and not by jpeg_mem_dest, which frees a buffer it
     * outgrows and reports the new one only at the end): after a longjmp this is the one buffer to free. */
    unsigned char *output;
    size_t capacity;
    size_t length;
} SluiceJpegWrite;

static void sluice_jpeg_fail(j_common_ptr cinfo) {
    SluiceJpegWrite *write = (SluiceJpegWrite *) cinfo->client_data;
    (*cinfo->err->format_message)(cinfo, write->message);
    longjmp(write->jump, 1);
}

/* libjpeg's warnings (libvips would add them to its error buffer); an encoder of pixels in memory has none worth
 * keeping, and a save that succeeds must not leave text there for the next error to carry. */
static void sluice_jpeg_quiet(j_common_ptr cinfo) {
    (void) cinfo;
}

static void sluice_jpeg_start(j_compress_ptr cinfo) {
    SluiceJpegWrite *write = (SluiceJpegWrite *) cinfo->client_data;
    write->destination.next_output_byte = write->output;
    write->destination.free_in_buffer = write->capacity;
}

/* The buffer is full: twice the room, the bytes so far kept. */
static boolean sluice_jpeg_grow(j_compress_ptr cinfo) {
    SluiceJpegWrite *write = (SluiceJpegWrite *) cinfo->client_data;
    unsigned char *grown = g_try_realloc(write->output, write->capacity * 2);
    if (!grown) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
    write->output = grown;
    write->destination.next_output_byte = grown + write->capacity;
    write->destination.free_in_buffer = write->capacity;
    write->capacity *= 2;
    return TRUE;
}

static void sluice_jpeg_end(j_compress_ptr cinfo) {
    SluiceJpegWrite *write = (SluiceJpegWrite *) cinfo->client_data;
    write->length = write->capacity - write->destination.free_in_buffer;
}

static int sluice_jpeg_encodes_here(VipsImage *in) {
    return sluice_vips_in_memory(in) && in->data && in->Bands == 3
        && in->BandFmt == VIPS_FORMAT_UCHAR && in->Coding == VIPS_CODING_NONE && in->Type == VIPS_INTERPRETATION_sRGB
        && in->Xsize > 0 && in->Ysize > 0 && in->Xsize <= JPEG_MAX_DIMENSION && in->Ysize <= JPEG_MAX_DIMENSION;
}

int sluice_vips_jpegsave_buffer_libvips(VipsImage *in, void **buf, size_t *len, int quality) {
    return vips_jpegsave_buffer(in, buf, len, "Q", quality, "strip", TRUE, NULL);
}

int sluice_vips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, int quality) {
    if (!sluice_jpeg_encodes_here(in)) return sluice_vips_jpegsave_buffer_libvips(in, buf, len, quality);
    SluiceJpegWrite *write = g_new0(SluiceJpegWrite, 1);
    struct jpeg_compress_struct *cinfo = g_new0(struct jpeg_compress_struct, 1);
    /* About what a photo compresses to at high quality, so a save seldom grows it. */
    write->capacity = MAX((size_t) 16384, (size_t) in->Xsize * (size_t) in->Ysize / 2);
    write->output = g_try_malloc(write->capacity);
    if (!write->output) {
        vips_error("jpegsave", "out of memory for a %zu-byte JPEG buffer", write->capacity);
        g_free(cinfo);
        g_free(write);
        return -1;
    }
    cinfo->client_data = write;
    cinfo->err = jpeg_std_error(&write->manager);
    write->manager.error_exit = sluice_jpeg_fail;
    write->manager.output_message = sluice_jpeg_quiet;
    if (setjmp(write->jump)) {
        jpeg_destroy_compress(cinfo);
        vips_error("jpegsave", "%s", write->message);
        g_free(write->output);
        g_free(cinfo);
        g_free(write);
        return -1;
    }
    jpeg_create_compress(cinfo);
    write->destination.init_destination = sluice_jpeg_start;
    write->destination.empty_output_buffer = sluice_jpeg_grow;
    write->destination.term_destination = sluice_jpeg_end;
    cinfo->dest = &write->destination;
    cinfo->image_width = (JDIMENSION) in->Xsize;
    cinfo->image_height = (JDIMENSION) in->Ysize;
    cinfo->input_components = 3;
    cinfo->in_color_space = JCS_RGB;
    jpeg_set_defaults(cinfo);
    cinfo->optimize_coding = FALSE;
    jpeg_set_quality(cinfo, quality, TRUE);
    if (quality >= 90) {
        for (int i = 0; i < cinfo->num_components; i++) {
            cinfo->comp_info[i].h_samp_factor = 1;
            cinfo->comp_info[i].v_samp_factor = 1;
        }
    }
    cinfo->restart_interval = 0;
    cinfo->write_JFIF_header = FALSE;
    jpeg_start_compress(cinfo, TRUE);
    const size_t stride = VIPS_IMAGE_SIZEOF_LINE(in);
    JSAMPROW rows[64];
    while (cinfo->next_scanline < cinfo->image_height) {
        JDIMENSION count = 0;
        for (; count < 64 && cinfo->next_scanline + count < cinfo->image_height; count++)
            rows[count] = (JSAMPROW) (VIPS_IMAGE_ADDR(in, 0, 0) + stride * (cinfo->next_scanline + count));
        jpeg_write_scanlines(cinfo, rows, count);
    }
    jpeg_finish_compress(cinfo);
    jpeg_destroy_compress(cinfo);
    /* Callers free the buffer with g_free, as libvips' own. */
    *buf = write->output;
    *len = write->length;
    g_free(cinfo);
    g_free(write);
    return 0;
}
