# One gam(method = "REML") fit of the link study's non-linear model on all usable rows, for
# test_gam_reml.py: log smoothing parameters, REML score, outer iterations, edf per smooth,
# m$sig2, sigma(m), coefficients and the s(surp) term effect with its standard error.
# Usage: Rscript reml_fit.R CSV MODEL OUT_DIR
suppressMessages(library(mgcv))
args <- commandArgs(TRUE)
d <- read.csv(args[1]); d <- d[d$model == args[2], ]
d <- d[is.finite(d$freq) & d$freq > 0 & is.finite(d$prev_freq) & d$prev_freq > 0 &
       is.finite(d$prev2_freq) & d$prev2_freq > 0, ]
m <- gam(gaze_rt ~ s(surp, bs = 'cr', k = 6) + s(prev_surp, bs = 'cr', k = 6) +
           te(freq, len, bs = 'cr') + te(prev_freq, prev_len, bs = 'cr'), data = d,
         method = "REML")
out <- args[3]
w <- function(x, name) write.table(format(x, digits = 17), file.path(out, name),
                                   row.names = FALSE, col.names = FALSE, quote = FALSE)
w(log(m$sp), "log_sp.txt"); w(c(m$gcv.ubre, m$outer.info$iter), "score.txt")
w(summary(m)$edf, "edf.txt"); w(c(m$sig2, sigma(m)), "scale.txt"); w(coef(m), "coef.txt")
x <- seq(0, 20, by = 0.5)
new <- d[rep(1, length(x)), ]; new$surp <- x
p <- predict(m, new, type = "terms", se.fit = TRUE)
w(cbind(x, p$fit[, "s(surp)"], p$se.fit[, "s(surp)"]), "effect.txt")
