#include "shim.h"
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>

/* A JPEG save on the calling thread. vips_jpegsave_buffer writes through vips_sink_disc: a libvips worker thread
 * prepares each strip and a write-behind thread compresses it while the caller waits, so a small image's save is
 * mostly hand-overs between threads. For an image already in memory the strips are only pointers into it, and
 * libjpeg can be given its rows directly. The settings are the ones libvips 8.14's jpegsave uses with "strip"
 * (vips2jpeg.c, write_vips): libjpeg's defaults, Huffman tables not optimised, jpeg_set_quality(Q, force
 * baseline), chroma not subsampled from Q 90 (subsample_mode auto), no restart markers, no JFIF, EXIF, XMP, IPTC
 * or ICC marker. ImageReductionTests compares the bytes with libvips' own save. */

typedef struct {
    struct jpeg_error_mgr manager;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    /* jpeg_mem_dest's buffer: kept here, not in locals, so it is still known after a longjmp. */
    unsigned char *output;
    unsigned long length;
} SluiceJpegWrite;

static void sluice_jpeg_fail(j_common_ptr cinfo) {
    SluiceJpegWrite *write = (SluiceJpegWrite *) cinfo->err;
    (*cinfo->err->format_message)(cinfo, write->message);
    longjmp(write->jump, 1);
}

/* libvips reports libjpeg's warnings through its log, which the shim silences; an encoder has none worth keeping. */
static void sluice_jpeg_quiet(j_common_ptr cinfo) {
    (void) cinfo;
}

static int sluice_jpeg_encodes_here(VipsImage *in) {
    return (in->dtype == VIPS_IMAGE_SETBUF || in->dtype == VIPS_IMAGE_SETBUF_FOREIGN) && in->Bands == 3
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
    cinfo->err = jpeg_std_error(&write->manager);
    write->manager.error_exit = sluice_jpeg_fail;
    write->manager.output_message = sluice_jpeg_quiet;
    if (setjmp(write->jump)) {
        jpeg_destroy_compress(cinfo);
        free(write->output);
        vips_error("jpegsave", "%s", write->message);
        g_free(cinfo);
        g_free(write);
        return -1;
    }
    jpeg_create_compress(cinfo);
    jpeg_mem_dest(cinfo, &write->output, &write->length);
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
    *buf = g_memdup2(write->output, write->length);
    *len = write->length;
    free(write->output);
    g_free(cinfo);
    g_free(write);
    return 0;
}
