#ifndef CPNG_SHIM_H
#define CPNG_SHIM_H
#include <png.h>
#include <string.h>

/// Encodes 8-bit RGB rows (tightly packed) as a PNG with libpng's simplified API.
/// With `out` NULL, stores the size needed in `*out_size`. Returns non-zero on success.
static inline int cpng_encode_rgb(const unsigned char *rgb, unsigned width, unsigned height,
                                  unsigned char *out, size_t *out_size) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = width;
    image.height = height;
    image.format = PNG_FORMAT_RGB;
    int ok = png_image_write_to_memory(&image, out, out_size, 0, rgb, 0, NULL);
    png_image_free(&image);
    return ok;
}
#endif
