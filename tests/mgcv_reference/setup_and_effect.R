# mgcv's model matrix, penalties, prediction matrices and a term effect, for test_gam_mgcv.py.
# Usage: Rscript setup_and_effect.R CSV MODEL OUT_DIR
suppressMessages(library(mgcv))
args <- commandArgs(TRUE)
d <- read.csv(args[1]); d <- d[d$model == args[2], ]
d <- d[is.finite(d$freq) & d$freq > 0 & is.finite(d$prev_freq) & d$prev_freq > 0 &
       is.finite(d$prev2_freq) & d$prev2_freq > 0, ]
f <- gaze_rt ~ surp + s(prev_surp, bs = 'cr', k = 6) + te(freq, len, bs = 'cr')
G <- gam(f, data = d, fit = FALSE)
out <- args[3]
w <- function(x, name) write.table(x, file.path(out, name), row.names = FALSE, col.names = FALSE)
w(G$X, "X.txt"); for (i in seq_along(G$S)) w(G$S[[i]], sprintf("S%d.txt", i)); w(G$off, "off.txt")
new <- d[1:6, ]; new$prev_surp <- c(-3, 0, 5, 10, 20, 45); new$freq <- c(0, 3, 8, 12, 20, 40)
new$len <- c(1, 2, 5, 9, 15, 30)
w(PredictMat(G$smooth[[1]], new), "P1.txt"); w(PredictMat(G$smooth[[2]], new), "P2.txt")
m <- gam(f, data = d)
p <- predict(m, new, type = "terms", se.fit = TRUE)
w(cbind(new$prev_surp, p$fit[, "s(prev_surp)"], p$se.fit[, "s(prev_surp)"],
        p$fit[, "surp"], p$se.fit[, "surp"], new$surp), "effect.txt")
w(c(sigma(m), m$sig2, summary(m)$edf), "fit.txt")
